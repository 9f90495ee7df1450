package ehrhttp_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
)

const (
	smartClientID = "carebridge-backend"
	smartKeyID    = "k1"
	smartScope    = "system/Patient.read"
)

// smartKeys are the key pairs of these tests, made once (RSA generation is
// slow under -race).
var smartKeys = sync.OnceValue(func() map[string][2]crypto.Signer {
	must := func(err error) {
		if err != nil {
			panic(err)
		}
	}
	r1, err := rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	r2, err := rsa.GenerateKey(rand.Reader, 2048)
	must(err)
	e1, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	e2, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	must(err)
	return map[string][2]crypto.Signer{"RS384": {r1, r2}, "ES384": {e1, e2}}
})

func pemOf(t *testing.T, k crypto.Signer) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// smartTokenEndpoint is a SMART Backend Services token endpoint that checks
// the client assertion as Epic's and Oracle Health's documentation
// describe: a form POST with grant_type client_credentials and the
// jwt-bearer assertion type; a JWT signed with the registered public key
// of its kid and the expected alg, typ JWT; iss = sub = client_id; aud =
// this token URL; exp in the future and at most 5 minutes ahead; a jti
// never seen before. A refusal is 400 or 401 with an OAuth2 error.
type smartTokenEndpoint struct {
	*httptest.Server
	alg       jose.SignatureAlgorithm
	publicKey crypto.PublicKey // registered for smartKeyID
	expiresIn int

	issued  atomic.Int64
	mu      sync.Mutex
	jtis    map[string]bool
	refused []string // reasons
	last    url.Values
}

func newSMARTTokenEndpoint(t *testing.T, alg string, pub crypto.PublicKey, expiresIn int) *smartTokenEndpoint {
	t.Helper()
	e := &smartTokenEndpoint{alg: jose.SignatureAlgorithm(alg), publicKey: pub, expiresIn: expiresIn, jtis: map[string]bool{}}
	e.Server = httptest.NewServer(http.HandlerFunc(e.serve))
	t.Cleanup(e.Close)
	return e
}

func (e *smartTokenEndpoint) tokenURL() string { return e.URL + "/oauth2/token" }

func (e *smartTokenEndpoint) refuse(w http.ResponseWriter, status int, code, why string) {
	e.mu.Lock()
	e.refused = append(e.refused, why)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": why})
}

func (e *smartTokenEndpoint) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/oauth2/token" ||
		r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" {
		e.refuse(w, http.StatusBadRequest, "invalid_request", "not a form POST to the token URL")
		return
	}
	if err := r.ParseForm(); err != nil {
		e.refuse(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	f := r.PostForm
	e.mu.Lock()
	e.last = f
	e.mu.Unlock()
	switch {
	case f.Get("grant_type") != "client_credentials":
		e.refuse(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type")
		return
	case f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
		e.refuse(w, http.StatusBadRequest, "invalid_request", "client_assertion_type")
		return
	case f.Get("scope") != smartScope:
		e.refuse(w, http.StatusBadRequest, "invalid_scope", "scope")
		return
	case f.Has("client_secret") || r.Header.Get("Authorization") != "":
		e.refuse(w, http.StatusBadRequest, "invalid_request", "a client secret besides the assertion")
		return
	}
	tok, err := jwt.ParseSigned(f.Get("client_assertion"), []jose.SignatureAlgorithm{e.alg})
	if err != nil {
		e.refuse(w, http.StatusBadRequest, "invalid_client", "assertion is not a JWS with alg "+string(e.alg))
		return
	}
	h := tok.Headers[0]
	if h.KeyID != smartKeyID || h.ExtraHeaders[jose.HeaderType] != "JWT" {
		e.refuse(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("header kid %q typ %v", h.KeyID, h.ExtraHeaders[jose.HeaderType]))
		return
	}
	var c jwt.Claims
	if err := tok.Claims(e.publicKey, &c); err != nil {
		e.refuse(w, http.StatusUnauthorized, "invalid_client", "signature does not verify with the registered key")
		return
	}
	now := time.Now()
	switch {
	case c.Issuer != smartClientID || c.Subject != smartClientID:
		e.refuse(w, http.StatusBadRequest, "invalid_client", "iss and sub must be the client_id")
		return
	case len(c.Audience) != 1 || c.Audience[0] != e.tokenURL():
		e.refuse(w, http.StatusBadRequest, "invalid_client", fmt.Sprintf("aud %v is not the token URL", c.Audience))
		return
	case c.Expiry == nil || !c.Expiry.Time().After(now):
		e.refuse(w, http.StatusBadRequest, "invalid_client", "expired")
		return
	case c.Expiry.Time().After(now.Add(5 * time.Minute)):
		e.refuse(w, http.StatusBadRequest, "invalid_client", "exp more than 5 minutes ahead")
		return
	case c.IssuedAt != nil && c.Expiry.Time().Sub(c.IssuedAt.Time()) > 5*time.Minute:
		e.refuse(w, http.StatusBadRequest, "invalid_client", "exp more than 5 minutes after iat")
		return
	case c.NotBefore != nil && c.NotBefore.Time().After(now.Add(time.Minute)):
		e.refuse(w, http.StatusBadRequest, "invalid_client", "not yet valid")
		return
	case len(c.ID) < 22: // 128 bits in base32 or base64
		e.refuse(w, http.StatusBadRequest, "invalid_client", "jti too short")
		return
	}
	e.mu.Lock()
	replay := e.jtis[c.ID]
	e.jtis[c.ID] = true
	e.mu.Unlock()
	if replay {
		e.refuse(w, http.StatusBadRequest, "invalid_client", "jti replayed")
		return
	}
	n := e.issued.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "bearer",
		"expires_in": e.expiresIn, "scope": smartScope})
}

func (e *smartTokenEndpoint) refusals() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.refused...)
}

func (e *smartTokenEndpoint) lastForm() url.Values {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last
}

func smartConfig(t *testing.T, e *smartTokenEndpoint, alg string, key crypto.Signer) ehrhttp.AuthConfig {
	return ehrhttp.AuthConfig{Type: ehrhttp.AuthPrivateKeyJWT, TokenURL: e.tokenURL(), ClientID: smartClientID,
		PrivateKey: pemOf(t, key), KeyID: smartKeyID, Algorithm: alg, Scopes: []string{smartScope}}
}

func getOK(t *testing.T, c *ehrhttp.Client) {
	t.Helper()
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestPrivateKeyJWT_AssertionAcceptedAndTokenCached(t *testing.T) {
	for _, alg := range []string{"RS384", "ES384"} {
		t.Run(alg, func(t *testing.T) {
			key := smartKeys()[alg][0]
			e := newSMARTTokenEndpoint(t, alg, key.Public(), 3600)
			ehr := newBearerEHR(t)
			c := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e, alg, key)})
			for range 5 {
				getOK(t, c)
			}
			h, err := c.AuthHeader(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Get("Authorization"); got != "Bearer tok-1" {
				t.Errorf("AuthHeader = %q", got)
			}
			if r := e.refusals(); len(r) != 0 {
				t.Fatalf("token endpoint refused: %v", r)
			}
			if n := e.issued.Load(); n != 1 {
				t.Errorf("%d token requests for 6 uses, want 1", n)
			}
			if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-1 tok-1 tok-1 tok-1]" {
				t.Errorf("EHR saw %s", got)
			}
			if f := e.lastForm(); f.Has("client_id") || len(f) != 4 {
				t.Errorf("form %v: want exactly grant_type, scope, client_assertion_type, client_assertion", keysOf(f))
			}
		})
	}
}

func keysOf(v url.Values) []string {
	var k []string
	for name := range v {
		k = append(k, name)
	}
	return k
}

func TestPrivateKeyJWT_RefreshedBeforeExpiryWithAFreshAssertion(t *testing.T) {
	// A 20 s token is inside the 30 s early-expiry window: each request
	// needs a new token, and so a new assertion with a new jti (the
	// endpoint refuses a replayed one).
	key := smartKeys()["ES384"][0]
	e := newSMARTTokenEndpoint(t, "ES384", key.Public(), 20)
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e, "ES384", key)})
	for range 3 {
		getOK(t, c)
	}
	if r := e.refusals(); len(r) != 0 {
		t.Fatalf("token endpoint refused: %v", r)
	}
	if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-2 tok-3]" {
		t.Errorf("EHR saw %s, want a new token each time", got)
	}
	e.mu.Lock()
	distinct := len(e.jtis)
	e.mu.Unlock()
	if n := distinct; n != 3 {
		t.Errorf("%d distinct jti, want 3", n)
	}

	// With a 10 s window the 20 s token is reused.
	e2 := newSMARTTokenEndpoint(t, "ES384", key.Public(), 20)
	c2 := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e2, "ES384", key)}, ehrhttp.WithTokenEarlyExpiry(10*time.Second))
	for range 3 {
		getOK(t, c2)
	}
	if n := e2.issued.Load(); n != 1 {
		t.Errorf("%d tokens issued with a 10 s window, want 1", n)
	}
}

func TestPrivateKeyJWT_OneTokenRequestUnderConcurrency(t *testing.T) {
	key := smartKeys()["RS384"][0]
	e := newSMARTTokenEndpoint(t, "RS384", key.Public(), 3600)
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e, "RS384", key)})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := c.AuthHeader(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := e.issued.Load(); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}

func TestPrivateKeyJWT_RevokedTokenIsReplacedOnce(t *testing.T) {
	key := smartKeys()["RS384"][0]
	e := newSMARTTokenEndpoint(t, "RS384", key.Public(), 3600)
	ehr := newBearerEHR(t, "tok-1")
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e, "RS384", key)})
	getOK(t, c)
	getOK(t, c)
	if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-2 tok-2]" {
		t.Errorf("EHR saw %s", got)
	}
	if r := e.refusals(); len(r) != 0 {
		t.Errorf("token endpoint refused: %v", r)
	}
}

func TestPrivateKeyJWT_ReplayedAssertionIsRefused(t *testing.T) {
	// The endpoint of these tests refuses a jti it has seen, as Epic and
	// Oracle Health do; the client never sends one twice (above).
	key := smartKeys()["ES384"][0]
	e := newSMARTTokenEndpoint(t, "ES384", key.Public(), 3600)
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: smartConfig(t, e, "ES384", key)})
	getOK(t, c)
	form := e.lastForm()
	resp, err := http.PostForm(e.tokenURL(), form)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"invalid_client"`) {
		t.Errorf("replay answered %d %s, want 400 invalid_client", resp.StatusCode, body)
	}
}

func TestPrivateKeyJWT_RefusedAssertionIsAuthFailed(t *testing.T) {
	rsaKey, otherRSA := smartKeys()["RS384"][0], smartKeys()["RS384"][1]
	tests := []struct {
		name   string
		alg    string
		signer crypto.Signer
		change func(a *ehrhttp.AuthConfig, e *smartTokenEndpoint)
		status string
	}{
		{"wrong key", "RS384", otherRSA, nil, "HTTP 401"},
		{"wrong kid", "RS384", rsaKey, func(a *ehrhttp.AuthConfig, _ *smartTokenEndpoint) { a.KeyID = "k2" }, "HTTP 400"},
		{"wrong client_id", "RS384", rsaKey, func(a *ehrhttp.AuthConfig, _ *smartTokenEndpoint) { a.ClientID = "someone" }, "HTTP 400"},
		{"token URL the EHR does not know as aud", "RS384", rsaKey, func(a *ehrhttp.AuthConfig, e *smartTokenEndpoint) {
			a.TokenURL = e.URL + "/oauth2/token?x=1"
		}, "HTTP 400"},
		{"EC key where RSA is registered", "ES384", smartKeys()["ES384"][0], nil, "HTTP 400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newSMARTTokenEndpoint(t, "RS384", rsaKey.Public(), 3600)
			auth := smartConfig(t, e, tt.alg, tt.signer)
			if tt.change != nil {
				tt.change(&auth, e)
			}
			ehr := newBearerEHR(t)
			c := newClient(t, ehr.Server, ehrhttp.Config{Auth: auth, RetryAttempts: 2})
			_, err := get(t, c, "/Patient")
			ce := wantCoreError(t, err, core.KindBadGateway, "ehr_auth_failed")
			if !strings.Contains(err.Error(), tt.status) || !strings.Contains(err.Error(), `"invalid_client"`) {
				t.Errorf("error %q: want the endpoint's %s invalid_client", err, tt.status)
			}
			if len(e.refusals()) == 0 {
				t.Error("the token endpoint accepted the assertion")
			}
			body := strings.Split(auth.PrivateKey, "\n")[2]
			for _, s := range []string{err.Error(), ce.Message, fmt.Sprint(auth), fmt.Sprintf("%+v", auth)} {
				if strings.Contains(s, body) || strings.Contains(s, "PRIVATE KEY") {
					t.Errorf("%q reveals the private key", s)
				}
			}
			if n := ehr.hits.Load(); n != 0 {
				t.Errorf("EHR hit %d times without a token", n)
			}
		})
	}
}

func TestNew_ValidatesPrivateKeyJWT(t *testing.T) {
	rsaPEM := pemOf(t, smartKeys()["RS384"][0])
	ok := ehrhttp.AuthConfig{Type: ehrhttp.AuthPrivateKeyJWT, TokenURL: "https://ehr.example/token", ClientID: "c",
		PrivateKey: rsaPEM, KeyID: "k1", Algorithm: "RS384"}
	tests := []struct {
		name   string
		change func(a *ehrhttp.AuthConfig)
		want   string
	}{
		{"valid", func(*ehrhttp.AuthConfig) {}, ""},
		{"no key id", func(a *ehrhttp.AuthConfig) { a.KeyID = "" }, "authentication.key_id is required for private_key_jwt"},
		{"no algorithm", func(a *ehrhttp.AuthConfig) { a.Algorithm = "" }, "authentication.algorithm must be RS384 or ES384"},
		{"RSA key with ES384", func(a *ehrhttp.AuthConfig) { a.Algorithm = "ES384" }, "authentication.private_key is an RSA key, which ES384 cannot use"},
		{"no key", func(a *ehrhttp.AuthConfig) { a.PrivateKey = "" }, "authentication.private_key is required for private_key_jwt"},
		{"garbage key", func(a *ehrhttp.AuthConfig) {
			a.PrivateKey = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}, "authentication.private_key is not a valid PRIVATE KEY PEM block"},
		{"no token url", func(a *ehrhttp.AuthConfig) { a.TokenURL = "" }, "authentication.token_url is required for private_key_jwt"},
		{"no client id", func(a *ehrhttp.AuthConfig) { a.ClientID = "" }, "authentication.client_id is required for private_key_jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := ok
			tt.change(&a)
			_, err := ehrhttp.New(ehrhttp.Config{Name: "ehr", BaseURL: "https://ehr.example/fhir", Auth: a})
			if tt.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), strings.Split(rsaPEM, "\n")[2]) {
				t.Errorf("error reveals the key: %v", err)
			}
		})
	}
	if s := ok.String(); s != "private_key_jwt(token_url=https://ehr.example/token client_id=c key_id=k1 algorithm=RS384 scopes=[])" {
		t.Errorf("String() = %q", s)
	}
}
