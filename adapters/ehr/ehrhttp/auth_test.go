package ehrhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
)

const (
	testClientID     = "carebridge"
	testClientSecret = "s3cret-value-42"
)

// tokenServer is a fake OAuth2 token endpoint issuing tok-1, tok-2, …
type tokenServer struct {
	*httptest.Server
	issued    atomic.Int64
	expiresIn int           // seconds; 0: no expires_in
	delay     time.Duration // before answering
	fail      func(w http.ResponseWriter) bool
}

func newTokenServer(t *testing.T, configure func(*tokenServer)) *tokenServer {
	t.Helper()
	ts := &tokenServer{expiresIn: 3600}
	if configure != nil {
		configure(ts)
	}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ts.fail != nil && ts.fail(w) {
			return
		}
		id, secret, ok := r.BasicAuth()
		if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		if !ok {
			id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
		}
		if id != testClientID || secret != testClientSecret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":"invalid_client"}`)
			return
		}
		if r.Form.Get("scope") != "system/Patient.read" {
			http.Error(w, `{"error":"invalid_scope"}`, http.StatusBadRequest)
			return
		}
		time.Sleep(ts.delay)
		n := ts.issued.Add(1)
		body := map[string]any{"access_token": fmt.Sprintf("tok-%d", n), "token_type": "Bearer"}
		if ts.expiresIn > 0 {
			body["expires_in"] = ts.expiresIn
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func oauthConfig(ts *tokenServer) ehrhttp.AuthConfig {
	return ehrhttp.AuthConfig{Type: "oauth2", TokenURL: ts.URL + "/oauth2/token", ClientID: testClientID,
		ClientSecret: testClientSecret, Scopes: []string{"system/Patient.read"}}
}

// bearerEHR is a fake EHR that records the bearer tokens it sees and
// answers 401 to the revoked ones.
type bearerEHR struct {
	*fakeEHR
	mu      sync.Mutex
	seen    []string
	revoked map[string]bool
}

func newBearerEHR(t *testing.T, revoked ...string) *bearerEHR {
	b := &bearerEHR{revoked: map[string]bool{}}
	for _, r := range revoked {
		b.revoked[r] = true
	}
	b.fakeEHR = newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		tok := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		b.mu.Lock()
		b.seen = append(b.seen, tok)
		bad := b.revoked[tok] || b.revoked["*"]
		b.mu.Unlock()
		if bad {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		io.WriteString(w, "ok")
	})
	return b
}

func (b *bearerEHR) tokens() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.seen...)
}

func TestDo_SendsTheConfiguredCredentials(t *testing.T) {
	ts := newTokenServer(t, nil)
	tests := []struct {
		name   string
		auth   ehrhttp.AuthConfig
		header string
		want   string
	}{
		{"none", ehrhttp.AuthConfig{}, "Authorization", ""},
		{"api key in X-API-Key", ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value"}, "X-API-Key", "k3y-value"},
		{"api key in a configured header", ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value", APIKeyHeader: "X-Custom-Key"}, "X-Custom-Key", "k3y-value"},
		{"basic", ehrhttp.AuthConfig{Type: "basic", Username: "svc", Password: "p4ss-value"}, "Authorization", "Basic c3ZjOnA0c3MtdmFsdWU="},
		{"oauth2 bearer", oauthConfig(ts), "Authorization", "Bearer tok-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got atomic.Value
			srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
				got.Store(r.Header.Clone())
			})
			c := newClient(t, srv.Server, ehrhttp.Config{Auth: tt.auth})
			resp, err := get(t, c, "/Patient")
			if err != nil {
				t.Fatal(err)
			}
			readBody(t, resp)
			h := got.Load().(http.Header)
			if v := h.Get(tt.header); v != tt.want {
				t.Errorf("%s = %q, want %q", tt.header, v, tt.want)
			}
			if tt.header != "Authorization" && h.Get("Authorization") != "" {
				t.Errorf("Authorization sent too: %q", h.Get("Authorization"))
			}

			ah, err := c.AuthHeader(context.Background())
			if err != nil {
				t.Fatalf("AuthHeader: %v", err)
			}
			if v := ah.Get(tt.header); v != tt.want {
				t.Errorf("AuthHeader %s = %q, want %q", tt.header, v, tt.want)
			}
		})
	}
}

func TestDo_DoesNotModifyTheCallersRequest(t *testing.T) {
	srv := newFakeEHR(t, func(int64, http.ResponseWriter, *http.Request) {})
	c := newClient(t, srv.Server, ehrhttp.Config{Auth: ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value"}})
	req, _ := http.NewRequest(http.MethodGet, c.URL("/Patient", nil), nil)
	resp, err := c.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if len(req.Header) != 0 {
		t.Errorf("the caller's request got headers %v", req.Header)
	}
}

func TestOAuth2_TokenIsCached(t *testing.T) {
	ts := newTokenServer(t, nil)
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)})
	for range 3 {
		resp, err := get(t, c, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	if _, err := c.AuthHeader(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := ts.issued.Load(); n != 1 {
		t.Errorf("%d tokens issued, want 1", n)
	}
	if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-1 tok-1]" {
		t.Errorf("EHR saw %s", got)
	}
}

func TestOAuth2_TokenIsRefreshedBeforeExpiry(t *testing.T) {
	// A token that expires in 20 s is already inside the 30 s early-expiry
	// window, so each request asks for a fresh one.
	ts := newTokenServer(t, func(ts *tokenServer) { ts.expiresIn = 20 })
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)})
	for range 2 {
		resp, err := get(t, c, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-2]" {
		t.Errorf("EHR saw %s, want a new token before the old one expired", got)
	}

	// With a 10 s window the same token is still good.
	ts2 := newTokenServer(t, func(ts *tokenServer) { ts.expiresIn = 20 })
	c2 := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts2)}, ehrhttp.WithTokenEarlyExpiry(10*time.Second))
	for range 2 {
		resp, err := get(t, c2, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
	}
	if n := ts2.issued.Load(); n != 1 {
		t.Errorf("%d tokens issued with a 10 s window, want 1", n)
	}
}

func TestOAuth2_OneRefreshUnderConcurrency(t *testing.T) {
	ts := newTokenServer(t, func(ts *tokenServer) { ts.delay = 100 * time.Millisecond })
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, c.URL("/Patient", nil), nil)
			resp, err := c.Do(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := ts.issued.Load(); n != 1 {
		t.Errorf("%d token requests, want exactly 1", n)
	}
	if n := ehr.hits.Load(); n != 50 {
		t.Errorf("EHR hits %d", n)
	}
}

func TestOAuth2_RevokedTokenIsReplacedOnce(t *testing.T) {
	ts := newTokenServer(t, nil)
	ehr := newBearerEHR(t, "tok-1")                                      // the EHR revoked the first token early
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)}) // RetryAttempts 0: the 401 retry is extra
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	if readBody(t, resp); resp.StatusCode != 200 {
		t.Errorf("status %d, want 200 with a fresh token", resp.StatusCode)
	}
	if got := fmt.Sprint(ehr.tokens()); got != "[tok-1 tok-2]" {
		t.Errorf("EHR saw %s", got)
	}
	// The fresh token is cached.
	resp, err = get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if n := ts.issued.Load(); n != 2 {
		t.Errorf("%d tokens issued, want 2", n)
	}
}

func TestOAuth2_PersistentUnauthorizedIsReturned(t *testing.T) {
	ts := newTokenServer(t, nil)
	ehr := newBearerEHR(t, "*")
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts), RetryAttempts: 3})
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	if readBody(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("status %d, want the 401", resp.StatusCode)
	}
	if n := ehr.hits.Load(); n != 2 {
		t.Errorf("EHR hits %d, want 2 (one retry with a fresh token)", n)
	}
}

func TestOAuth2_ConcurrentUnauthorizedRefreshOnce(t *testing.T) {
	ts := newTokenServer(t, func(ts *tokenServer) { ts.delay = 20 * time.Millisecond })
	ehr := newBearerEHR(t, "tok-1")
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, c.URL("/Patient", nil), nil)
			resp, err := c.Do(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	if n := ts.issued.Load(); n != 2 {
		t.Errorf("%d tokens issued, want 2 (one replacement for all the 401s)", n)
	}
}

func TestOAuth2_TokenEndpointFailureIsAuthFailed(t *testing.T) {
	tests := []struct {
		name string
		fail func(w http.ResponseWriter) bool
		auth func(ehrhttp.AuthConfig) ehrhttp.AuthConfig
	}{
		{"wrong secret", nil, func(a ehrhttp.AuthConfig) ehrhttp.AuthConfig { a.ClientSecret = "wrong-" + testClientSecret; return a }},
		{"server error echoing the secret", func(w http.ResponseWriter) bool {
			http.Error(w, "internal error for client_secret="+testClientSecret, http.StatusInternalServerError)
			return true
		}, nil},
		{"oauth error echoing the secret", func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"invalid_request","error_description":"bad secret `+testClientSecret+`"}`)
			return true
		}, nil},
		{"malformed JSON", func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token": "tok-`)
			return true
		}, nil},
		{"no access token", func(w http.ResponseWriter) bool {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"token_type":"Bearer"}`)
			return true
		}, nil},
		{"dropped connection", func(w http.ResponseWriter) bool {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return true
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, func(ts *tokenServer) { ts.fail = tt.fail })
			auth := oauthConfig(ts)
			if tt.auth != nil {
				auth = tt.auth(auth)
			}
			ehr := newBearerEHR(t)
			c := newClient(t, ehr.Server, ehrhttp.Config{Auth: auth, RetryAttempts: 2})
			_, err := get(t, c, "/Patient")
			wantCoreError(t, err, core.KindBadGateway, "ehr_auth_failed")
			if strings.Contains(err.Error(), testClientSecret) {
				t.Errorf("error leaks the client secret: %v", err)
			}
			if n := ehr.hits.Load(); n != 0 {
				t.Errorf("EHR hit %d times without a token", n)
			}

			_, err = c.AuthHeader(context.Background())
			wantCoreError(t, err, core.KindBadGateway, "ehr_auth_failed")
			if strings.Contains(err.Error(), testClientSecret) {
				t.Errorf("AuthHeader error leaks the client secret: %v", err)
			}
		})
	}
}

func TestOAuth2_TokenFailuresDoNotTripBreaker(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	ts := newTokenServer(t, func(ts *tokenServer) {
		ts.fail = func(w http.ResponseWriter) bool {
			if down.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return true
			}
			return false
		}
	})
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts)})
	for range 6 {
		_, err := get(t, c, "/Patient")
		wantCoreError(t, err, core.KindBadGateway, "ehr_auth_failed")
	}
	down.Store(false)
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatalf("after the token endpoint recovered: %v", err)
	}
	readBody(t, resp)
}

func TestOAuth2_HungTokenEndpointTimesOut(t *testing.T) {
	done := make(chan struct{})
	ts := newTokenServer(t, func(ts *tokenServer) {
		ts.fail = func(http.ResponseWriter) bool { <-done; return true }
	})
	t.Cleanup(func() { close(done) })
	ehr := newBearerEHR(t)
	c := newClient(t, ehr.Server, ehrhttp.Config{Auth: oauthConfig(ts), Timeout: 50 * time.Millisecond})
	// The token endpoint never answers: only the 50 ms time-out can end
	// the call, and no request reaches the EHR without a token.
	_, err := get(t, c, "/Patient")
	var e *core.Error
	if !errors.As(err, &e) || (e.Code != "ehr_timeout" && e.Code != "ehr_auth_failed") {
		t.Fatalf("err %v, want ehr_timeout or ehr_auth_failed", err)
	}
	if n := ehr.hits.Load(); n != 0 {
		t.Errorf("EHR hits %d without a token, want 0", n)
	}
}
