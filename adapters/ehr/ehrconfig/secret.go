package ehrconfig

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

const (
	// KeySize is the size of EHR_CREDENTIALS_KEY in bytes.
	KeySize = 32
	// EncPrefix starts a secret encrypted under EHR_CREDENTIALS_KEY.
	EncPrefix = "enc:v1:"
	// EnvPrefix starts a secret read from an environment variable.
	EnvPrefix = "env:"
	// secretAD is the additional data every encrypted secret is sealed
	// with, so the credentials key cannot be confused with any other use.
	secretAD = "carebridge/ehr-secret/v1"
	redacted = "[REDACTED]"
)

// Secret is a credential read from the EHR systems file, already decrypted.
// It never prints, logs or marshals its value: every fmt verb, slog and
// encoding/json, encoding.TextMarshaler users (yaml) see "[REDACTED]".
// Value returns the credential itself.
type Secret struct{ value string }

// NewSecret wraps a credential, for adapters' tests and the CLI.
func NewSecret(v string) Secret { return Secret{value: v} }

// Value returns the credential in the clear.
func (s Secret) Value() string { return s.value }

// IsZero reports whether no credential is set.
func (s Secret) IsZero() bool { return s.value == "" }

// String returns "[REDACTED]", or "" when no credential is set.
func (s Secret) String() string {
	if s.value == "" {
		return ""
	}
	return redacted
}

// GoString redacts as String does (the %#v verb).
func (s Secret) GoString() string { return `ehrconfig.Secret("` + s.String() + `")` }

// Format redacts under every fmt verb, %d and %x included.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		_, _ = io.WriteString(f, s.GoString())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// LogValue redacts the credential in slog output.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText redacts the credential in JSON, YAML and the like.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// EncryptSecret seals plaintext under key (32 bytes, EHR_CREDENTIALS_KEY)
// with AES-256-GCM and returns its "enc:v1:" form for the EHR systems file:
// "enc:v1:" followed by the unpadded base64url of nonce (12 random bytes) ||
// ciphertext || tag, sealed with the additional data
// "carebridge/ehr-secret/v1". Used by `carebridge secrets encrypt`.
func EncryptSecret(key []byte, plaintext string) (string, error) {
	if plaintext == "" {
		return "", errors.New("ehrconfig: secret is empty")
	}
	aead, err := newAEAD(key)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("ehrconfig: nonce: %w", err)
	}
	sealed := aead.Seal(nonce, nonce, []byte(plaintext), []byte(secretAD))
	return EncPrefix + base64.RawURLEncoding.EncodeToString(sealed), nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != KeySize {
		return nil, fmt.Errorf("ehrconfig: credentials key must be %d bytes, got %d", KeySize, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("ehrconfig: credentials key: %w", err)
	}
	return cipher.NewGCM(block)
}

// errKeyRequired is reported for an enc:v1: value when no key was given.
var errKeyRequired = errors.New("EHR_CREDENTIALS_KEY is required to decrypt enc:v1: values")

// secretResolver turns the written form of a secret into its value. Its
// errors never contain the written form nor the value.
type secretResolver struct {
	key    []byte
	getenv func(string) string
	aead   cipher.AEAD // made on first use
	keyErr error
}

func (r *secretResolver) resolve(written string) (Secret, error) {
	switch {
	case strings.HasPrefix(written, EncPrefix):
		return r.decrypt(strings.TrimPrefix(written, EncPrefix))
	case strings.HasPrefix(written, "enc:"):
		return Secret{}, errors.New("unsupported encrypted form; expected enc:v1:")
	case strings.HasPrefix(written, EnvPrefix):
		name := strings.TrimPrefix(written, EnvPrefix)
		if !validEnvName(name) {
			return Secret{}, errors.New("env: must be followed by a variable name ([A-Za-z_][A-Za-z0-9_]*)")
		}
		v := ""
		if r.getenv != nil {
			v = r.getenv(name)
		}
		if v == "" {
			return Secret{}, fmt.Errorf("environment variable %s is not set or empty", name)
		}
		return Secret{value: v}, nil
	default:
		return Secret{}, errors.New("plaintext secrets are refused; use enc:v1: or env:")
	}
}

func (r *secretResolver) decrypt(encoded string) (Secret, error) {
	if len(r.key) == 0 {
		return Secret{}, errKeyRequired
	}
	if r.aead == nil && r.keyErr == nil {
		r.aead, r.keyErr = newAEAD(r.key)
	}
	if r.keyErr != nil {
		return Secret{}, errors.New("EHR_CREDENTIALS_KEY is not a valid 32-byte key")
	}
	sealed, err := base64.RawURLEncoding.Strict().DecodeString(strings.TrimRight(encoded, "="))
	if err != nil {
		return Secret{}, errors.New("enc:v1: value is not valid base64url")
	}
	ns := r.aead.NonceSize()
	if len(sealed) < ns+r.aead.Overhead()+1 {
		return Secret{}, errors.New("enc:v1: value is too short")
	}
	plain, err := r.aead.Open(nil, sealed[:ns], sealed[ns:], []byte(secretAD))
	if err != nil {
		return Secret{}, errors.New("cannot decrypt enc:v1: value (wrong EHR_CREDENTIALS_KEY or damaged value)")
	}
	return Secret{value: string(plain)}, nil
}

func validEnvName(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i, c := range []byte(s) {
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
