package ehrhttp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// SMART Backend Services (private_key_jwt): the client authenticates to the
// token endpoint with a JWT signed by its private key (RFC 7523), whose
// public key the EHR holds.
const (
	// Signing algorithms of the client assertion.
	AlgRS384 = "RS384"
	AlgES384 = "ES384"

	// ClientAssertionType is the client_assertion_type of the token request.
	ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// AssertionLifetime is how long a client assertion is valid. SMART
	// allows at most five minutes; one is kept back for clock skew between
	// Carebridge and the EHR.
	AssertionLifetime = 4 * time.Minute
	// MinRSABits is the smallest RSA key accepted for RS384.
	MinRSABits = 2048
)

// ParseSigningKey reads a PEM private key for alg: an RSA key of at least
// MinRSABits bits for RS384, a P-384 EC key for ES384. PKCS #8 ("PRIVATE
// KEY"), PKCS #1 ("RSA PRIVATE KEY") and SEC 1 ("EC PRIVATE KEY", possibly
// after an "EC PARAMETERS" block) are read; encrypted PEM is refused. Its
// errors never quote the key.
func ParseSigningKey(pemText, alg string) (crypto.Signer, error) {
	if alg != AlgRS384 && alg != AlgES384 {
		return nil, fmt.Errorf("algorithm %q is not RS384 or ES384", alg)
	}
	rest := []byte(pemText)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("is not a PEM private key")
		}
		var (
			key any
			err error
		)
		switch block.Type {
		case "EC PARAMETERS":
			continue
		case "ENCRYPTED PRIVATE KEY":
			return nil, errors.New("is an encrypted PEM key; give it unencrypted (enc:v1: protects it)")
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			return nil, fmt.Errorf("is a PEM %q block, not a private key", block.Type)
		}
		if block.Headers["Proc-Type"] != "" {
			return nil, errors.New("is an encrypted PEM key; give it unencrypted (enc:v1: protects it)")
		}
		if err != nil {
			return nil, fmt.Errorf("is not a valid %s PEM block", block.Type)
		}
		return checkKey(key, alg)
	}
}

func checkKey(key any, alg string) (crypto.Signer, error) {
	switch k := key.(type) {
	case *rsa.PrivateKey:
		if alg != AlgRS384 {
			return nil, fmt.Errorf("is an RSA key, which %s cannot use (RS384 can)", alg)
		}
		if n := k.N.BitLen(); n < MinRSABits {
			return nil, fmt.Errorf("is a %d-bit RSA key; at least %d bits are required", n, MinRSABits)
		}
		return k, nil
	case *ecdsa.PrivateKey:
		if alg != AlgES384 {
			return nil, fmt.Errorf("is an EC key, which %s cannot use (ES384 can)", alg)
		}
		if k.Curve != elliptic.P384() {
			return nil, fmt.Errorf("is an EC key on %s; ES384 needs P-384", k.Curve.Params().Name)
		}
		return k, nil
	default:
		return nil, fmt.Errorf("is a %T key; %s needs %s", key, alg, map[string]string{AlgRS384: "RSA", AlgES384: "EC P-384"}[alg])
	}
}

// assertionSource fetches client-credentials tokens authenticated by a
// fresh signed client assertion per request. It does not cache: oauth
// wraps it in the same reuse-with-early-expiry cache as client secrets.
type assertionSource struct {
	ctx      context.Context // carries the token http.Client (oauth2.HTTPClient)
	signer   jose.Signer
	clientID string
	tokenURL string
	scopes   []string
	now      func() time.Time
}

func newAssertionSource(ctx context.Context, a AuthConfig) (*assertionSource, error) {
	key, err := ParseSigningKey(a.PrivateKey, a.Algorithm)
	if err != nil {
		return nil, fmt.Errorf("private_key %w", err)
	}
	signer, err := jose.NewSigner(
		jose.SigningKey{Algorithm: jose.SignatureAlgorithm(a.Algorithm), Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", a.KeyID))
	if err != nil {
		return nil, fmt.Errorf("private_key: %w", err)
	}
	return &assertionSource{ctx: ctx, signer: signer, clientID: a.ClientID, tokenURL: a.TokenURL,
		scopes: a.Scopes, now: time.Now}, nil
}

// assertion signs a client assertion: iss = sub = client_id, aud = the
// token URL, iat and nbf now, exp AssertionLifetime later, and a random
// jti of 130 bits.
func (s *assertionSource) assertion() (string, error) {
	now := s.now()
	return jwt.Signed(s.signer).Claims(jwt.Claims{
		Issuer:    s.clientID,
		Subject:   s.clientID,
		Audience:  jwt.Audience{s.tokenURL},
		IssuedAt:  jwt.NewNumericDate(now),
		NotBefore: jwt.NewNumericDate(now),
		Expiry:    jwt.NewNumericDate(now.Add(AssertionLifetime)),
		ID:        rand.Text(),
	}).Serialize()
}

// Token posts grant_type=client_credentials, scope, client_assertion_type
// and client_assertion as a form; no client_id or client_secret is sent
// (the assertion names the client).
func (s *assertionSource) Token() (*oauth2.Token, error) {
	assertion, err := s.assertion()
	if err != nil {
		return nil, fmt.Errorf("sign client assertion: %w", err)
	}
	cfg := clientcredentials.Config{
		TokenURL:  s.tokenURL,
		Scopes:    s.scopes,
		AuthStyle: oauth2.AuthStyleInParams,
		EndpointParams: url.Values{
			"client_assertion_type": {ClientAssertionType},
			"client_assertion":      {assertion},
		},
	}
	return cfg.Token(s.ctx)
}
