package ehrhttp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
)

// Authentication types.
const (
	AuthNone   = ""
	AuthOAuth2 = "oauth2"
	AuthAPIKey = "api_key"
	AuthBasic  = "basic"
	// AuthPrivateKeyJWT is SMART Backend Services: client credentials
	// with a client assertion signed by the private key (see
	// jwtassertion.go).
	AuthPrivateKeyJWT = "private_key_jwt"
)

// DefaultAPIKeyHeader carries the API key when AuthConfig.APIKeyHeader is
// empty.
const DefaultAPIKeyHeader = "X-API-Key"

// AuthConfig is how Carebridge authenticates to one EHR system. Secrets are
// given decrypted; String and LogValue mask them.
type AuthConfig struct {
	Type         string   // "oauth2", "private_key_jwt", "api_key", "basic", or "" for none
	TokenURL     string   // oauth2, private_key_jwt
	ClientID     string   // oauth2, private_key_jwt
	ClientSecret string   // oauth2 (already decrypted)
	Scopes       []string // oauth2, private_key_jwt
	PrivateKey   string   // private_key_jwt: PEM (already decrypted), see ehrconfig.ParseSigningKey
	KeyID        string   // private_key_jwt: the kid the EHR knows the public key by
	Algorithm    string   // private_key_jwt: RS384 or ES384
	APIKey       string   // api_key (already decrypted)
	APIKeyHeader string   // api_key; "" means X-API-Key
	Username     string   // basic
	Password     string   // basic (already decrypted)
}

// String describes a without its secrets.
func (a AuthConfig) String() string {
	switch a.Type {
	case AuthOAuth2:
		return fmt.Sprintf("oauth2(token_url=%s client_id=%s scopes=%v)", a.TokenURL, a.ClientID, a.Scopes)
	case AuthPrivateKeyJWT:
		return fmt.Sprintf("private_key_jwt(token_url=%s client_id=%s key_id=%s algorithm=%s scopes=%v)",
			a.TokenURL, a.ClientID, a.KeyID, a.Algorithm, a.Scopes)
	case AuthAPIKey:
		return fmt.Sprintf("api_key(header=%s)", a.apiKeyHeader())
	case AuthBasic:
		return fmt.Sprintf("basic(username=%s)", a.Username)
	case AuthNone:
		return "none"
	default:
		return fmt.Sprintf("unknown(%q)", a.Type)
	}
}

// LogValue logs a without its secrets.
func (a AuthConfig) LogValue() slog.Value { return slog.StringValue(a.String()) }

func (a AuthConfig) apiKeyHeader() string {
	if a.APIKeyHeader == "" {
		return DefaultAPIKeyHeader
	}
	return http.CanonicalHeaderKey(a.APIKeyHeader)
}

// secrets lists the values that must never show in an error text.
func (a AuthConfig) secrets() []string {
	var s []string
	for _, w := range []string{a.ClientSecret, a.PrivateKey, a.APIKey, a.Password} {
		if len(w) >= 4 { // masking shorter strings would garble messages and hide nothing
			s = append(s, w)
		}
	}
	if a.Type == AuthBasic && len(a.Password) >= 4 {
		s = append(s, basicCredential(a.Username, a.Password))
	}
	return s
}

func (a AuthConfig) validate(bad func(field, format string, args ...any)) {
	const at = "authentication."
	switch a.Type {
	case AuthNone:
	case AuthOAuth2, AuthPrivateKeyJWT:
		u, err := url.Parse(a.TokenURL)
		switch {
		case a.TokenURL == "":
			bad(at+"token_url", "is required for %s", a.Type)
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			bad(at+"token_url", "must be an absolute http or https URL")
		case u.User != nil:
			bad(at+"token_url", "must not carry credentials")
		}
		if a.ClientID == "" {
			bad(at+"client_id", "is required for %s", a.Type)
		}
		if a.Type == AuthOAuth2 && a.ClientSecret == "" {
			bad(at+"client_secret", "is required for oauth2")
		}
		if a.Type == AuthPrivateKeyJWT {
			if a.KeyID == "" {
				bad(at+"key_id", "is required for private_key_jwt")
			} else if hasControlByte(a.KeyID) {
				bad(at+"key_id", "must not contain control characters")
			}
			switch {
			case a.Algorithm != ehrconfig.AlgRS384 && a.Algorithm != ehrconfig.AlgES384:
				bad(at+"algorithm", "must be RS384 or ES384")
			case a.PrivateKey == "":
				bad(at+"private_key", "is required for private_key_jwt")
			default:
				if _, err := ehrconfig.ParseSigningKey(a.PrivateKey, a.Algorithm); err != nil {
					bad(at+"private_key", "%s", err)
				}
			}
		}
	case AuthAPIKey:
		if a.APIKey == "" {
			bad(at+"api_key", "is required for api_key")
		} else if !validHeaderValue(a.APIKey) {
			bad(at+"api_key", "holds characters a header cannot carry")
		}
		if a.APIKeyHeader != "" && !validHeaderName(a.APIKeyHeader) {
			bad(at+"api_key_header", "%q is not a valid header name", a.APIKeyHeader)
		}
	case AuthBasic:
		if a.Username == "" {
			bad(at+"username", "is required for basic")
		} else if strings.Contains(a.Username, ":") {
			bad(at+"username", "must not contain a colon")
		}
	default:
		bad(at+"type", "%q is not one of oauth2, private_key_jwt, api_key, basic", a.Type)
	}
}

// validHeaderName reports whether s is an HTTP token (RFC 9110 5.1).
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

func hasControlByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// validHeaderValue reports whether s can be sent as a header value: no
// control characters other than tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// authenticator adds credentials to requests.
type authenticator interface {
	// header returns the header to add and, for OAuth2, the generation of
	// the token cache it came from.
	header(ctx context.Context) (http.Header, uint64, error)
	// refreshable reports whether a 401 answer is worth a new credential.
	refreshable() bool
	// invalidate drops the cached credential of generation gen.
	invalidate(gen uint64)
}

func newAuthenticator(a AuthConfig, tokenClient *http.Client, early time.Duration) authenticator {
	switch a.Type {
	case AuthOAuth2:
		return newOAuth(a, tokenClient, early)
	case AuthPrivateKeyJWT:
		return newPrivateKeyJWT(a, tokenClient, early)
	case AuthAPIKey:
		h := http.Header{}
		h.Set(a.apiKeyHeader(), a.APIKey)
		return staticAuth{h}
	case AuthBasic:
		h := http.Header{}
		h.Set("Authorization", "Basic "+basicCredential(a.Username, a.Password))
		return staticAuth{h}
	default:
		return staticAuth{http.Header{}}
	}
}

func basicCredential(user, password string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
}

// staticAuth sends the same header on every request.
type staticAuth struct{ h http.Header }

func (s staticAuth) header(context.Context) (http.Header, uint64, error) { return s.h.Clone(), 0, nil }
func (staticAuth) refreshable() bool                                     { return false }
func (staticAuth) invalidate(uint64)                                     {}

// failedAuth is an authenticator that cannot authenticate (its
// configuration failed after validation, which should not happen).
type failedAuth struct{ err error }

func (f failedAuth) header(context.Context) (http.Header, uint64, error) { return nil, 0, f.err }
func (failedAuth) refreshable() bool                                     { return false }
func (failedAuth) invalidate(uint64)                                     {}

// oauth caches client-credentials tokens, whether the client authenticates
// with a secret (oauth2) or a signed assertion (private_key_jwt): a token is reused until
// `early` before its expiry, and one refresh runs at a time (concurrent
// callers wait for it: oauth2.ReuseTokenSourceWithExpiry holds a lock while
// it fetches). A 401 from the EHR drops the cache (invalidate), once per
// token generation however many requests saw it.
type oauth struct {
	// fetch returns a source that asks the token endpoint; a new one per
	// cache generation, so a dropped token is never served again.
	fetch func() oauth2.TokenSource
	early time.Duration

	mu  sync.Mutex
	ts  oauth2.TokenSource
	gen uint64
}

func newOAuth(a AuthConfig, tokenClient *http.Client, early time.Duration) *oauth {
	cfg := &clientcredentials.Config{
		ClientID:     a.ClientID,
		ClientSecret: a.ClientSecret,
		TokenURL:     a.TokenURL,
		Scopes:       a.Scopes,
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tokenClient)
	return newTokenCache(func() oauth2.TokenSource { return cfg.TokenSource(ctx) }, early)
}

// newPrivateKeyJWT is newOAuth for SMART Backend Services: the same cache,
// a token endpoint request authenticated by a fresh client assertion.
func newPrivateKeyJWT(a AuthConfig, tokenClient *http.Client, early time.Duration) authenticator {
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, tokenClient)
	src, err := newAssertionSource(ctx, a)
	if err != nil {
		return failedAuth{err}
	}
	return newTokenCache(func() oauth2.TokenSource { return src }, early)
}

func newTokenCache(fetch func() oauth2.TokenSource, early time.Duration) *oauth {
	o := &oauth{fetch: fetch, early: early}
	o.ts = o.newSource()
	return o
}

func (o *oauth) newSource() oauth2.TokenSource {
	// clientcredentials' own source is a ReuseTokenSource; this re-arms
	// that same cache with the early-expiry window (no double caching).
	return oauth2.ReuseTokenSourceWithExpiry(nil, o.fetch(), o.early)
}

func (o *oauth) header(ctx context.Context) (http.Header, uint64, error) {
	o.mu.Lock()
	ts, gen := o.ts, o.gen
	o.mu.Unlock()

	// The token request runs under the token client's time-out, not ctx
	// (the oauth2 API takes no context per call); ctx only bounds how long
	// this caller waits for it. A fetch left behind still fills the cache.
	type result struct {
		t   *oauth2.Token
		err error
	}
	ch := make(chan result, 1)
	go func() {
		t, err := ts.Token()
		ch <- result{t, err}
	}()
	var r result
	select {
	case r = <-ch:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	if r.err != nil {
		return nil, 0, r.err
	}
	if r.t.AccessToken == "" {
		return nil, 0, errors.New("token endpoint sent no access token")
	}
	h := http.Header{}
	h.Set("Authorization", "Bearer "+r.t.AccessToken)
	return h, gen, nil
}

func (o *oauth) refreshable() bool { return true }

func (o *oauth) invalidate(gen uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.gen == gen {
		o.gen++
		o.ts = o.newSource()
	}
}

// tokenCause describes a token endpoint failure without the endpoint's
// body or URL (either could echo what was sent).
func tokenCause(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		if re.ErrorCode != "" {
			return fmt.Errorf("token endpoint answered HTTP %d, error %q", status, re.ErrorCode)
		}
		return fmt.Errorf("token endpoint answered HTTP %d", status)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("token endpoint unreachable: %w", ue.Err)
	}
	return fmt.Errorf("token endpoint: %w", err)
}

// withAuth adds the credentials of a to each attempt (on a copy of the
// request), noting the token generation for a refresh after a 401. A
// failure to obtain them is a failAuth.
func withAuth(a authenticator) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			h, gen, err := a.header(ctx)
			if err != nil {
				return nil, &failure{kind: failAuth, err: err}
			}
			callOf(ctx).gen = gen
			r := req.Clone(ctx)
			if r.Header == nil {
				r.Header = http.Header{}
			}
			for k, v := range h {
				r.Header[k] = v
			}
			return next(ctx, r)
		}
	}
}
