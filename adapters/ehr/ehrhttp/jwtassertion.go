package ehrhttp

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
)

// SMART Backend Services (private_key_jwt): the client authenticates to the
// token endpoint with a JWT signed by its private key (RFC 7523), whose
// public key the EHR holds. The signing algorithms and keys are those of
// the EHR systems file (ehrconfig.AlgRS384, ehrconfig.ParseSigningKey).
const (
	// ClientAssertionType is the client_assertion_type of the token request.
	ClientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	// AssertionLifetime is how long a client assertion is valid. SMART
	// allows at most five minutes; one is kept back for clock skew between
	// Carebridge and the EHR.
	AssertionLifetime = 4 * time.Minute
)

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
	key, err := ehrconfig.ParseSigningKey(a.PrivateKey, a.Algorithm)
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
