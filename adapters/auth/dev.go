package auth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"
)

// DevIssuer is the "iss" of tokens minted with the local dev key.
const DevIssuer = "carebridge-dev"

// NewDev returns a Verifier for AUTH_DEV_MODE: it accepts ES256 tokens with
// issuer DevIssuer and the given audience, signed by key (as MintDevToken
// makes them). All the rules of NewOIDC apply; only the key source differs.
// The caller must refuse dev mode unless the server listens on loopback
// (see IsLoopback).
func NewDev(key *ecdsa.PrivateKey, audience string, opts ...Option) (*Verifier, error) {
	if err := checkDevKey(key); err != nil {
		return nil, err
	}
	if audience == "" {
		return nil, errors.New("dev audience is empty")
	}
	keys := &oidc.StaticKeySet{PublicKeys: []crypto.PublicKey{key.Public()}}
	return newVerifier(DevIssuer, keys, audience, []string{oidc.ES256}, buildOptions(opts)), nil
}

// DevScopes are the scopes of a dev token minted without any: a member of
// staff's, who may search patients and act on every appointment.
const DevScopes = "user/Patient.rs user/Appointment.cruds"

// MintDevToken returns an ES256 JWT signed by key for subject and audience,
// with iss DevIssuer, iat and nbf now, exp now+ttl, the key's RFC 7638
// thumbprint as kid, and scope (space-separated; "" leaves the claim out).
func MintDevToken(key *ecdsa.PrivateKey, audience, subject, scope string, ttl time.Duration) (string, error) {
	if err := checkDevKey(key); err != nil {
		return "", err
	}
	switch {
	case audience == "":
		return "", errors.New("mint dev token: audience is empty")
	case checkSubject(subject) != nil:
		return "", fmt.Errorf("mint dev token: %w", checkSubject(subject))
	case ttl <= 0:
		return "", fmt.Errorf("mint dev token: ttl %v is not positive", ttl)
	}
	kid, err := keyID(key)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("JWT"),
	)
	if err != nil {
		return "", fmt.Errorf("mint dev token: %w", err)
	}
	now := time.Now()
	claims := map[string]any{
		"iss": DevIssuer,
		"aud": audience,
		"sub": subject,
		"iat": now.Unix(),
		"nbf": now.Unix(),
		"exp": now.Add(ttl).Unix(),
	}
	if scope = strings.Join(strings.Fields(scope), " "); scope != "" {
		claims["scope"] = scope
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("mint dev token: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("mint dev token: %w", err)
	}
	return jws.CompactSerialize()
}

// LoadOrCreateDevKey returns the P-256 key stored in the PEM file at path,
// creating it on first use: missing parent directories are made with mode
// 0700 and the file with 0600. An existing file that others may read, or
// that does not hold a P-256 private key, is an error. Concurrent first
// calls agree on one key.
func LoadOrCreateDevKey(path string) (*ecdsa.PrivateKey, error) {
	key, err := loadDevKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, err
	}
	return createDevKey(path)
}

func loadDevKey(path string) (*ecdsa.PrivateKey, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	// Windows reports no meaningful permission bits.
	if perm := info.Mode().Perm(); perm&0o077 != 0 && runtime.GOOS != "windows" {
		return nil, fmt.Errorf("dev key %s is accessible by other users (mode %04o); chmod 600 it", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("dev key %s: no PEM block", path)
	}
	var key *ecdsa.PrivateKey
	switch block.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("dev key %s: %w", path, err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("dev key %s: %T is not an ECDSA key", path, k)
		}
		key = ec
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("dev key %s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("dev key %s: unexpected PEM block %q", path, block.Type)
	}
	if err := checkDevKey(key); err != nil {
		return nil, fmt.Errorf("dev key %s: %w", path, err)
	}
	return key, nil
}

// createDevKey writes a new key to a temporary file and links it into
// place, so readers never see a partial file and a concurrent creator's key
// wins over ours instead of being overwritten.
func createDevKey(path string) (*ecdsa.PrivateKey, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create dev key directory: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate dev key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode dev key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".devkey-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("create dev key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := pem.Encode(tmp, &pem.Block{Type: "PRIVATE KEY", Bytes: der}); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write dev key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return loadDevKey(path)
		}
		return nil, fmt.Errorf("create dev key: %w", err)
	}
	return key, nil
}

func checkDevKey(key *ecdsa.PrivateKey) error {
	if key == nil {
		return errors.New("dev key is nil")
	}
	if key.Curve != elliptic.P256() {
		return errors.New("dev key is not a P-256 key")
	}
	return nil
}

// keyID is the base64url RFC 7638 thumbprint of key's public half.
func keyID(key *ecdsa.PrivateKey) (string, error) {
	jwk := jose.JSONWebKey{Key: key.Public()}
	sum, err := jwk.Thumbprint(crypto.SHA256)
	if err != nil {
		return "", fmt.Errorf("dev key thumbprint: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(sum), nil
}
