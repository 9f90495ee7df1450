package webhook

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

const (
	// SecretPrefix starts the text of a signing secret, as Standard
	// Webhooks writes them.
	SecretPrefix = "whsec_"
	// SecretSize is the number of random bytes of a signing secret.
	SecretSize = 32
	// KeySize is the size of the sealing key in bytes (AES-256).
	KeySize = 32
	// MaxURLLength is the longest receiver URL accepted.
	MaxURLLength = 2048
	// sealDomain, followed by the subscription id, is the additional data
	// a secret is sealed with: a sealed secret opens only for its own
	// subscription, and the key cannot be confused with any other use.
	sealDomain = "carebridge/webhook-secret/v1:"
)

// NewSecret returns a fresh signing secret: its text, "whsec_" followed by
// the standard base64 of 32 random bytes, to show the operator once; and
// those bytes, the HMAC key, to seal and store.
func NewSecret() (text string, raw []byte) {
	raw = make([]byte, SecretSize)
	_, _ = rand.Read(raw) // never fails: crypto/rand crashes the program instead
	return SecretPrefix + base64.StdEncoding.EncodeToString(raw), raw
}

// Sealer encrypts signing secrets at rest with AES-256-GCM. A sealed
// secret is nonce (12 random bytes) || ciphertext || tag, sealed with the
// additional data "carebridge/webhook-secret/v1:" || subscription id.
// It seals under its first key and opens under any of its keys, so secrets
// sealed before a key rotation still open: a sealed secret does not record
// its key, and GCM's tag tells the right key from the others.
type Sealer struct{ aeads []cipher.AEAD }

// NewSealer returns a sealer that seals under key and opens under key and
// older, the keys it replaced; each must be 32 bytes.
func NewSealer(key []byte, older ...[]byte) (*Sealer, error) {
	s := &Sealer{}
	for _, k := range append([][]byte{key}, older...) {
		if len(k) != KeySize {
			return nil, fmt.Errorf("webhook: sealing key must be %d bytes, got %d", KeySize, len(k))
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, fmt.Errorf("webhook: sealing key: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("webhook: sealing key: %w", err)
		}
		s.aeads = append(s.aeads, aead)
	}
	return s, nil
}

// Seal encrypts the secret raw of subscription subscriptionID under the
// sealer's first key.
func (s *Sealer) Seal(subscriptionID string, raw []byte) []byte {
	aead := s.aeads[0]
	n := aead.NonceSize()
	nonce := make([]byte, n, n+len(raw)+aead.Overhead())
	_, _ = rand.Read(nonce) // never fails: crypto/rand crashes the program instead
	return aead.Seal(nonce, nonce, raw, []byte(sealDomain+subscriptionID))
}

// errCannotOpen is every failure of Open: it tells nothing of the secret.
var errCannotOpen = errors.New("webhook: secret cannot be opened")

// Open decrypts what Seal returned for subscriptionID, under whichever of
// the sealer's keys sealed it. A sealed secret that was altered, belongs to
// another subscription or was sealed under none of the keys is an error,
// which never contains the secret.
func (s *Sealer) Open(subscriptionID string, sealed []byte) ([]byte, error) {
	for _, aead := range s.aeads {
		n := aead.NonceSize()
		if len(sealed) < n+aead.Overhead() {
			return nil, errCannotOpen
		}
		if raw, err := aead.Open(nil, sealed[:n], sealed[n:], []byte(sealDomain+subscriptionID)); err == nil {
			return raw, nil
		}
	}
	return nil, errCannotOpen
}

// Reseal opens a sealed secret under whichever key sealed it and seals it
// again under the first key, so that older keys can be retired.
func (s *Sealer) Reseal(subscriptionID string, sealed []byte) ([]byte, error) {
	raw, err := s.Open(subscriptionID, sealed)
	if err != nil {
		return nil, err
	}
	return s.Seal(subscriptionID, raw), nil
}

// ValidURL checks a receiver URL: absolute http or https with a host, an
// optional port in range, no user name or password (they would be stored
// in clear), at most 2048 characters. Loopback hosts are allowed: the
// operator who registers receivers is trusted. Its errors are plain
// sentences for the admin CLI and do not repeat the URL.
func ValidURL(raw string) error {
	if len(raw) > MaxURLLength {
		return fmt.Errorf("URL is longer than %d characters", MaxURLLength)
	}
	if strings.TrimSpace(raw) != raw {
		return errors.New("URL must not start or end with white space")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("URL cannot be parsed")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return errors.New("URL must be absolute and start with http:// or https://")
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errors.New("URL must name a host, as in https://example.com/hooks")
	}
	if u.User != nil {
		return errors.New("URL must not contain a user name or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return errors.New("URL port must be between 1 and 65535")
		}
	}
	return nil
}

// Secrets makes the signing secrets of new subscriptions and rotations,
// sealed with Sealer; it implements event.Secrets.
type Secrets struct{ Sealer *Sealer }

// New returns a fresh secret of subscription id: its text, to show once,
// and the secret sealed for storage.
func (s Secrets) New(id string) (text string, sealed []byte) {
	text, raw := NewSecret()
	return text, s.Sealer.Seal(id, raw)
}
