// Package auth verifies bearer tokens (JWTs) and turns them into a
// core.Actor.
//
// Two verifiers share one set of rules: NewOIDC trusts an OpenID Connect
// issuer found through discovery and its remote JWKS; NewDev trusts a local
// ECDSA key for AUTH_DEV_MODE (see LoadOrCreateDevKey and MintDevToken).
// Both use github.com/coreos/go-oidc for the signature, issuer, audience and
// expiry checks, and add the ones it lacks: a subject is required, a missing
// exp is refused, and nbf is enforced with 30 s of clock skew (go-oidc
// allows 5 minutes). Only asymmetric algorithms are accepted, so "none" and
// HMAC tokens are refused before any key is consulted.
package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/carebridge/carebridge/core"
)

// Failures returned by Authenticate. Each copy carries its cause in Err for
// the logs; the message never contains token contents.
var (
	ErrInvalidToken = &core.Error{Kind: core.KindUnauthenticated, Code: "invalid_token", Message: "Invalid bearer token"}
	ErrTokenExpired = &core.Error{Kind: core.KindUnauthenticated, Code: "token_expired", Message: "Bearer token has expired"}
)

const (
	// NotBeforeSkew is how far in the future a token's nbf may lie and the
	// token still be accepted.
	NotBeforeSkew = 30 * time.Second

	// maxTokenBytes bounds the work spent on a token; real ID and access
	// tokens are a few KiB.
	maxTokenBytes = 32 << 10

	// maxSubjectBytes is the OIDC Core limit on "sub" (255 ASCII characters).
	maxSubjectBytes = 255

	// defaultHTTPTimeout bounds discovery and JWKS requests; go-oidc fetches
	// keys in the background with a context that is never cancelled, so the
	// client's own timeout is what stops a hung issuer.
	defaultHTTPTimeout = 10 * time.Second
)

// asymmetricAlgs are the JWS algorithms a verifier may accept.
func asymmetricAlgs() []string {
	return []string{
		oidc.RS256, oidc.RS384, oidc.RS512,
		oidc.PS256, oidc.PS384, oidc.PS512,
		oidc.ES256, oidc.ES384, oidc.ES512,
		oidc.EdDSA,
	}
}

// Verifier authenticates bearer tokens. It is safe for concurrent use.
type Verifier struct {
	verifier *oidc.IDTokenVerifier
	now      func() time.Time
	cache    *tokenCache // nil: every token is verified in full
}

// Option configures a Verifier.
type Option func(*options)

type options struct {
	client   *http.Client
	now      func() time.Time
	cacheTTL time.Duration
}

// WithCacheTTL sets how long a verified token is trusted without another
// signature check (DefaultCacheTTL; 0 turns the cache off).
func WithCacheTTL(ttl time.Duration) Option {
	return func(o *options) { o.cacheTTL = ttl }
}

// WithHTTPClient sets the client used for discovery and JWKS requests
// (NewOIDC only). The default has a 10 s timeout.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) { o.client = c }
}

// WithClock sets the source of the current time for the exp and nbf checks.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

func buildOptions(opts []Option) options {
	o := options{now: time.Now, cacheTTL: DefaultCacheTTL}
	for _, opt := range opts {
		opt(&o)
	}
	if o.client == nil {
		o.client = &http.Client{Timeout: defaultHTTPTimeout}
	}
	if o.now == nil {
		o.now = time.Now
	}
	return o
}

// Authenticate verifies rawToken (the bearer credential, without the
// "Bearer " prefix; surrounding white space is ignored) and returns the
// caller it names. Every failure is a copy of ErrInvalidToken or, for an
// expired token, ErrTokenExpired.
func (v *Verifier) Authenticate(ctx context.Context, rawToken string) (core.Actor, error) {
	raw := strings.TrimSpace(rawToken)
	switch {
	case raw == "":
		return core.Actor{}, ErrInvalidToken.WithMessage("Missing bearer token")
	case len(raw) > maxTokenBytes:
		return core.Actor{}, ErrInvalidToken.Wrap(errors.New("token too large"))
	}
	// A token in the cache passed every check below when it was put there.
	if actor, ok := v.cache.get(raw, v.now()); ok {
		return actor, nil
	}
	if strings.ContainsFunc(raw, notCompactJWS) {
		// go-jose strips white space inside a token; a bearer token has
		// none, so anything but the compact alphabet is refused here.
		return core.Actor{}, ErrInvalidToken.Wrap(errors.New("token has characters outside base64url and '.'"))
	}

	tok, err := v.verifier.Verify(ctx, raw)
	if err != nil {
		return core.Actor{}, verifyError(err)
	}

	// The signature, issuer, audience and expiry are good; what follows
	// are our own rules, so the messages may be specific.
	var claims struct {
		Expiry    *json.Number    `json:"exp"`
		NotBefore *json.Number    `json:"nbf"`
		Scope     json.RawMessage `json:"scope"`
		Scp       json.RawMessage `json:"scp"`
	}
	if err := tok.Claims(&claims); err != nil {
		return core.Actor{}, ErrInvalidToken.Wrap(fmt.Errorf("decode claims: %w", err))
	}
	if claims.Expiry == nil {
		return core.Actor{}, ErrInvalidToken.WithMessage("Bearer token has no expiry")
	}
	if claims.NotBefore != nil {
		nbf, err := claims.NotBefore.Float64()
		if err != nil {
			return core.Actor{}, ErrInvalidToken.Wrap(fmt.Errorf("nbf: %w", err))
		}
		// Compared as numbers: a huge nbf must not wrap around to the past.
		if limit := v.now().Add(NotBeforeSkew).Unix(); nbf > float64(limit) {
			return core.Actor{}, ErrInvalidToken.WithMessage("Bearer token is not valid yet").
				Wrap(fmt.Errorf("nbf %s is after %d", claims.NotBefore, limit))
		}
	}
	if err := checkSubject(tok.Subject); err != nil {
		return core.Actor{}, ErrInvalidToken.WithMessage("Bearer token has no valid subject").Wrap(err)
	}
	actor := core.Actor{Subject: tok.Subject, Scopes: scopes(claims.Scope, claims.Scp)}
	v.cache.put(raw, actor, tok.Expiry, v.now())
	return actor, nil
}

// verifyError names what go-oidc refused: an expired token (or one without
// an expiry, which go-oidc reads as the zero time) or any other fault.
func verifyError(err error) error {
	var expired *oidc.TokenExpiredError
	if !errors.As(err, &expired) {
		return ErrInvalidToken.Wrap(err)
	}
	if expired.Expiry.IsZero() {
		return ErrInvalidToken.WithMessage("Bearer token has no expiry").Wrap(err)
	}
	return ErrTokenExpired.Wrap(err)
}

// scopes reads the OAuth2 scopes of the claims scope and scp, each a
// space-separated string or an array of strings; both count when both are
// present. A claim of any other shape makes a token with no scopes at all
// (fail closed), never an error.
func scopes(claims ...json.RawMessage) []core.Scope {
	var values []string
	for _, c := range claims {
		if len(c) == 0 || string(c) == "null" {
			continue
		}
		var one string
		if err := json.Unmarshal(c, &one); err == nil {
			values = append(values, one)
			continue
		}
		var many []string
		if err := json.Unmarshal(c, &many); err != nil {
			return nil
		}
		values = append(values, many...)
	}
	return core.ParseScopes(values...)
}

// notCompactJWS reports whether r cannot appear in a compact JWS
// (base64url segments separated by dots).
func notCompactJWS(r rune) bool {
	return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' ||
		r == '-' || r == '_' || r == '.')
}

// checkSubject accepts a non-blank subject of at most 255 bytes of valid
// UTF-8 without control characters: it is stored as an owner and logged.
func checkSubject(sub string) error {
	switch {
	case strings.TrimSpace(sub) == "":
		return errors.New("sub missing or empty")
	case len(sub) > maxSubjectBytes:
		return errors.New("sub longer than 255 bytes")
	case !utf8.ValidString(sub):
		return errors.New("sub is not valid UTF-8")
	case strings.ContainsFunc(sub, unicode.IsControl):
		return errors.New("sub contains control characters")
	}
	return nil
}

// newVerifier wraps a go-oidc verifier configured with our rules.
func newVerifier(issuer string, keys oidc.KeySet, audience string, algs []string, o options) *Verifier {
	cfg := &oidc.Config{
		ClientID:             audience,
		SupportedSigningAlgs: algs,
		Now:                  o.now,
	}
	return &Verifier{verifier: oidc.NewVerifier(issuer, keys, cfg), now: o.now, cache: newTokenCache(o.cacheTTL)}
}

// allowedAlgs keeps the issuer's advertised algorithms that are asymmetric,
// or all asymmetric ones when it advertises none of them.
func allowedAlgs(advertised []string) []string {
	all := asymmetricAlgs()
	var out []string
	for _, a := range advertised {
		if slices.Contains(all, a) && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}
