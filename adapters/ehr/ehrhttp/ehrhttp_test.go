package ehrhttp_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
)

// fakeEHR is an httptest server that counts its hits.
type fakeEHR struct {
	*httptest.Server
	hits atomic.Int64
}

// newFakeEHR starts a fake EHR; h gets the number of the hit (from 1).
func newFakeEHR(t *testing.T, h func(n int64, w http.ResponseWriter, r *http.Request)) *fakeEHR {
	t.Helper()
	f := &fakeEHR{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h(f.hits.Add(1), w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// sleeps records the waits between attempts instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func newClient(t *testing.T, srv *httptest.Server, cfg ehrhttp.Config, opts ...ehrhttp.Option) *ehrhttp.Client {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "clinic-a"
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = srv.URL + "/fhir"
	}
	c, err := ehrhttp.New(cfg, append([]ehrhttp.Option{ehrhttp.WithHTTPClient(srv.Client())}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

func get(t *testing.T, c *ehrhttp.Client, path string) (*http.Response, error) {
	t.Helper()
	return getCtx(t, context.Background(), c, path)
}

func getCtx(t *testing.T, ctx context.Context, c *ehrhttp.Client, path string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.URL(path, nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(ctx, req)
}

// readBody reads and closes resp's body.
func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return string(b)
}

// wantCoreError checks that err is a *core.Error of kind and code, and
// names the system.
func wantCoreError(t *testing.T, err error, kind core.Kind, code string) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("err = %v (%T), want *core.Error %s", err, err, code)
	}
	if e.Kind != kind || e.Code != code {
		t.Fatalf("err = kind %d code %q (%v), want kind %d code %q", e.Kind, e.Code, err, kind, code)
	}
	if !strings.Contains(e.Message, "clinic-a") {
		t.Errorf("message %q does not name the system", e.Message)
	}
	return e
}

func TestNew_ValidatesConfig(t *testing.T) {
	ok := ehrhttp.Config{Name: "clinic-a", BaseURL: "https://ehr.example/fhir"}
	tests := []struct {
		name   string
		change func(*ehrhttp.Config)
		want   []string // substrings of the error; nil: valid
	}{
		{"valid without auth", func(*ehrhttp.Config) {}, nil},
		{"valid oauth2", func(c *ehrhttp.Config) {
			c.Auth = ehrhttp.AuthConfig{Type: "oauth2", TokenURL: "https://ehr.example/token", ClientID: "cb", ClientSecret: "s3cret-value"}
		}, nil},
		{"valid api key", func(c *ehrhttp.Config) { c.Auth = ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value"} }, nil},
		{"valid basic", func(c *ehrhttp.Config) {
			c.Auth = ehrhttp.AuthConfig{Type: "basic", Username: "u", Password: "p4ss-value"}
		}, nil},
		{"valid wss base for the bot", func(c *ehrhttp.Config) { c.BaseURL = "wss://bot.example/ws" }, nil},
		{"name required", func(c *ehrhttp.Config) { c.Name = " " }, []string{"name is required"}},
		{"base_url required", func(c *ehrhttp.Config) { c.BaseURL = "" }, []string{`"clinic-a": base_url is required`}},
		{"base_url relative", func(c *ehrhttp.Config) { c.BaseURL = "/fhir" }, []string{"base_url must be an absolute"}},
		{"base_url ftp", func(c *ehrhttp.Config) { c.BaseURL = "ftp://ehr.example/" }, []string{"base_url must be an absolute"}},
		{"base_url without host", func(c *ehrhttp.Config) { c.BaseURL = "https:///fhir" }, []string{"base_url has no host"}},
		{"base_url with credentials", func(c *ehrhttp.Config) { c.BaseURL = "https://u:pw-in-url@ehr.example/" }, []string{"base_url must not carry credentials"}},
		{"base_url with query", func(c *ehrhttp.Config) { c.BaseURL = "https://ehr.example/fhir?x=1" }, []string{"base_url must not have a query"}},
		{"unknown auth type", func(c *ehrhttp.Config) { c.Auth.Type = "kerberos" }, []string{`authentication.type "kerberos"`}},
		{"oauth2 fields required", func(c *ehrhttp.Config) { c.Auth = ehrhttp.AuthConfig{Type: "oauth2"} }, []string{
			"authentication.token_url is required", "authentication.client_id is required", "authentication.client_secret is required"}},
		{"oauth2 token_url relative", func(c *ehrhttp.Config) {
			c.Auth = ehrhttp.AuthConfig{Type: "oauth2", TokenURL: "/token", ClientID: "cb", ClientSecret: "s3cret-value"}
		}, []string{"authentication.token_url must be an absolute"}},
		{"api key required", func(c *ehrhttp.Config) { c.Auth = ehrhttp.AuthConfig{Type: "api_key"} }, []string{"authentication.api_key is required"}},
		{"api key header invalid", func(c *ehrhttp.Config) {
			c.Auth = ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value", APIKeyHeader: "X Key"}
		}, []string{"authentication.api_key_header"}},
		{"api key with a newline", func(c *ehrhttp.Config) { c.Auth = ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value\r\nX: y"} }, []string{"authentication.api_key holds characters"}},
		{"basic username required", func(c *ehrhttp.Config) { c.Auth = ehrhttp.AuthConfig{Type: "basic", Password: "p4ss-value"} }, []string{"authentication.username is required"}},
		{"negative numbers", func(c *ehrhttp.Config) { c.RequestsPerMinute, c.Timeout, c.RetryAttempts = -1, -1, -1 }, []string{
			"rate_limit.requests_per_minute must not be negative", "timeout must not be negative", "retry_attempts must be from 0 to 10"}},
		{"too many retries", func(c *ehrhttp.Config) { c.RetryAttempts = 11 }, []string{"retry_attempts must be from 0 to 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.change(&cfg)
			c, err := ehrhttp.New(cfg)
			if tt.want == nil {
				if err != nil || c == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("New accepted an invalid config")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			for _, secret := range []string{"s3cret-value", "k3y-value", "p4ss-value", "pw-in-url"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q leaks a secret", err)
				}
			}
		})
	}
}

func TestAuthConfig_FormattingHidesSecrets(t *testing.T) {
	cfg := ehrhttp.Config{Name: "clinic-a", BaseURL: "https://ehr.example", Auth: ehrhttp.AuthConfig{
		Type: "oauth2", TokenURL: "https://ehr.example/token", ClientID: "cb",
		ClientSecret: "s3cret-value", APIKey: "k3y-value", Password: "p4ss-value"}}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("ehr", "auth", cfg.Auth)
	for _, s := range []string{fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), logged.String()} {
		for _, secret := range []string{"s3cret-value", "k3y-value", "p4ss-value"} {
			if strings.Contains(s, secret) {
				t.Errorf("%q shows a secret", s)
			}
		}
	}
}

func TestURL_JoinsBaseAndPath(t *testing.T) {
	tests := []struct {
		base, path string
		query      url.Values
		want       string
	}{
		{"https://ehr.example/fhir", "/Patient", url.Values{"name": {"Ana Díaz"}, "_count": {"20"}},
			"https://ehr.example/fhir/Patient?_count=20&name=Ana+D%C3%ADaz"},
		{"https://ehr.example/fhir/", "Patient/123", nil, "https://ehr.example/fhir/Patient/123"},
		{"https://ehr.example", "/Patient", nil, "https://ehr.example/Patient"},
		{"https://ehr.example/fhir", "Patient/" + url.PathEscape("a/b"), nil, "https://ehr.example/fhir/Patient/a%2Fb"},
	}
	for _, tt := range tests {
		c, err := ehrhttp.New(ehrhttp.Config{Name: "clinic-a", BaseURL: tt.base})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.URL(tt.path, tt.query); got != tt.want {
			t.Errorf("URL(%q, %v) on %s = %q, want %q", tt.path, tt.query, tt.base, got, tt.want)
		}
		if c.Name() != "clinic-a" {
			t.Errorf("Name() = %q", c.Name())
		}
	}
}

func TestDo_RefusesOtherHosts(t *testing.T) {
	srv := newFakeEHR(t, func(int64, http.ResponseWriter, *http.Request) {})
	c := newClient(t, srv.Server, ehrhttp.Config{Auth: ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value"}})
	u, _ := url.Parse(srv.URL)
	for _, target := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://evil.example" + "/fhir/Patient",
		"https://" + u.Host + "/fhir/Patient", // another scheme
		"http://" + u.Hostname() + ":1/fhir/Patient",
		"http://user:pw@" + u.Host + "/fhir/Patient",
	} {
		req, _ := http.NewRequest(http.MethodGet, target, nil)
		_, err := c.Do(context.Background(), req)
		var e *core.Error
		if !errors.As(err, &e) || e.Code != "ehr_request_refused" {
			t.Errorf("Do(%s) = %v, want ehr_request_refused", target, err)
		}
	}
	if n := srv.hits.Load(); n != 0 {
		t.Errorf("server hit %d times", n)
	}
}

func TestDo_DoesNotFollowRedirectsToOtherHosts(t *testing.T) {
	var leaked atomic.Value
	elsewhere := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) { leaked.Store(r.Header.Get("X-Api-Key")) })
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/steal", http.StatusFound)
	})
	c := newClient(t, srv.Server, ehrhttp.Config{Auth: ehrhttp.AuthConfig{Type: "api_key", APIKey: "k3y-value"}})
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if resp.StatusCode != http.StatusFound {
		t.Errorf("status %d, want the 302 itself", resp.StatusCode)
	}
	if elsewhere.hits.Load() != 0 {
		t.Errorf("the redirect to another host was followed (key %v)", leaked.Load())
	}
}

func TestDo_BodyStaysReadableAfterDoReturns(t *testing.T) {
	returned := make(chan struct{}) // closed once Do has returned
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "first part,")
		w.(http.Flusher).Flush()
		select {
		case <-returned:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "second part")
	})
	c := newClient(t, srv.Server, ehrhttp.Config{Timeout: 2 * time.Second})
	resp, err := get(t, c, "/Patient")
	close(returned)
	if err != nil {
		t.Fatal(err)
	}
	if got := readBody(t, resp); got != "first part,second part" {
		t.Errorf("body %q", got)
	}
}

func TestDo_RetriesServerErrorThenSucceeds(t *testing.T) {
	srv := newFakeEHR(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, `{"resourceType":"Bundle"}`)
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 2}, ehrhttp.WithSleep(s.sleep))
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	if body := readBody(t, resp); resp.StatusCode != 200 || body != `{"resourceType":"Bundle"}` {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
	if n := srv.hits.Load(); n != 2 {
		t.Errorf("hits %d, want 2", n)
	}
	if d := s.all(); len(d) != 1 || d[0] > ehrhttp.DefaultBackoffBase {
		t.Errorf("waits %v, want one within [0, %v]", d, ehrhttp.DefaultBackoffBase)
	}
}

func TestDo_PersistentServerErrorReturnsLastAnswer(t *testing.T) {
	srv := newFakeEHR(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"resourceType":"OperationOutcome","attempt":%d}`, n)
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 3},
		ehrhttp.WithSleep(s.sleep), ehrhttp.WithBackoff(10*time.Millisecond, 25*time.Millisecond))
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatalf("Do: %v, want the EHR's last answer", err)
	}
	if body := readBody(t, resp); resp.StatusCode != http.StatusBadGateway || body != `{"resourceType":"OperationOutcome","attempt":4}` {
		t.Errorf("got %d %q, want the 4th answer", resp.StatusCode, body)
	}
	if n := srv.hits.Load(); n != 4 {
		t.Errorf("hits %d, want retry_attempts+1 = 4", n)
	}
	waits := s.all()
	caps := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 25 * time.Millisecond}
	if len(waits) != len(caps) {
		t.Fatalf("waits %v, want 3", waits)
	}
	for i, d := range waits {
		if d < 0 || d > caps[i] {
			t.Errorf("wait %d = %v, want within [0, %v]", i, d, caps[i])
		}
	}
}

func TestDo_ClientErrorIsNotRetriedAndDoesNotTripBreaker(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"resourceType":"OperationOutcome"}`)
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 3}, ehrhttp.WithSleep(s.sleep))
	for i := range 8 {
		resp, err := get(t, c, "/Patient/x")
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if readBody(t, resp); resp.StatusCode != http.StatusNotFound {
			t.Fatalf("call %d: status %d", i, resp.StatusCode)
		}
	}
	if n := srv.hits.Load(); n != 8 {
		t.Errorf("hits %d, want 8 (one per call, breaker closed)", n)
	}
	if len(s.all()) != 0 {
		t.Errorf("waited %v before retrying a 4xx", s.all())
	}
}

// In a synctest bubble, over an in-process transport: the open period
// passes on the bubble's clock, not by sleeping "long enough".
func TestDo_BreakerOpensAfterFiveFailuresAndRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var healthy atomic.Bool
		var hits atomic.Int64
		ehr := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if healthy.Load() {
				io.WriteString(w, "ok")
				return
			}
			http.Error(w, "down", http.StatusServiceUnavailable)
		})
		c, err := ehrhttp.New(ehrhttp.Config{Name: "clinic-a", BaseURL: "http://clinic-a.test/fhir"},
			ehrhttp.WithHTTPClient(&http.Client{Transport: inProcess{ehr}}), ehrhttp.WithBreaker(5, 150*time.Millisecond))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		for i := range 5 {
			resp, err := get(t, c, "/Patient")
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			readBody(t, resp)
		}
		start := time.Now()
		_, err = get(t, c, "/Patient")
		wantCoreError(t, err, core.KindUnavailable, "circuit_open")
		// The bubble's clock moves only when the call waits on a timer: it
		// stands still, so the open breaker answered without waiting.
		if waited := time.Since(start); waited != 0 {
			t.Errorf("an open breaker waited %v (on the bubble's clock) to answer", waited)
		}
		if n := hits.Load(); n != 5 {
			t.Errorf("hits %d, want 5: the open breaker must not reach the EHR", n)
		}

		healthy.Store(true)
		time.Sleep(200 * time.Millisecond) // on the bubble's clock, past the open period: half-open, one trial request
		resp, err := get(t, c, "/Patient")
		if err != nil {
			t.Fatalf("after the open period: %v", err)
		}
		if readBody(t, resp); resp.StatusCode != 200 {
			t.Errorf("status %d", resp.StatusCode)
		}
	})
}

// inProcess is a transport that serves each request with a handler in the
// calling goroutine: no sockets, so it works inside a synctest bubble.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, r)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

func TestDo_BreakerOpeningStopsRetries(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 10}, ehrhttp.WithSleep(s.sleep), ehrhttp.WithBreaker(3, time.Minute))
	resp, err := get(t, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	if readBody(t, resp); resp.StatusCode != 500 {
		t.Errorf("status %d", resp.StatusCode)
	}
	if n := srv.hits.Load(); n != 3 {
		t.Errorf("hits %d, want 3: no retry once the breaker is open", n)
	}
}

func TestDo_HonoursRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header func() string
		want   time.Duration
	}{
		{"seconds", func() string { return "1" }, time.Second},
		{"http date", func() string { return time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat) }, 2 * time.Second},
		{"capped", func() string { return "3600" }, ehrhttp.MaxRetryAfter},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeEHR(t, func(n int64, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					w.Header().Set("Retry-After", tt.header())
					w.WriteHeader(http.StatusTooManyRequests)
					return
				}
				io.WriteString(w, "ok")
			})
			var s sleeps
			c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 1}, ehrhttp.WithSleep(s.sleep))
			resp, err := get(t, c, "/Patient")
			if err != nil {
				t.Fatal(err)
			}
			if readBody(t, resp); resp.StatusCode != 200 {
				t.Errorf("status %d", resp.StatusCode)
			}
			d := s.all()
			// An HTTP date has a one-second resolution.
			if len(d) != 1 || d[0] < tt.want || d[0] > tt.want+time.Second {
				t.Errorf("waits %v, want one of %v", d, tt.want)
			}
		})
	}
}

// newBubbleClient returns a client of h over an in-process transport, for
// a synctest bubble: the bubble's clock then measures exactly the waits
// the client makes on its own timers (the default sleep, the limiter).
func newBubbleClient(t *testing.T, h http.HandlerFunc, cfg ehrhttp.Config, opts ...ehrhttp.Option) *ehrhttp.Client {
	t.Helper()
	cfg.Name, cfg.BaseURL = "clinic-a", "http://clinic-a.test/fhir"
	c, err := ehrhttp.New(cfg, append([]ehrhttp.Option{ehrhttp.WithHTTPClient(&http.Client{Transport: inProcess{h}})}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// The default sleep (no WithSleep) waits the Retry-After: on the bubble's
// clock the call takes exactly the second asked for.
func TestDo_RetryAfterWaitsOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			io.WriteString(w, "ok")
		}, ehrhttp.Config{RetryAttempts: 1})
		start := time.Now()
		resp, err := get(t, c, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		if el := time.Since(start); resp.StatusCode != 200 || el != time.Second {
			t.Errorf("status %d after %v on the bubble's clock, want 200 after 1 s", resp.StatusCode, el)
		}
		if n := hits.Load(); n != 2 {
			t.Errorf("hits %d, want 2", n)
		}
	})
}

// In a synctest bubble: the caller's 500 ms cannot pass while the EHR
// answers, and the clock standing still shows the client did not wait.
func TestDo_DoesNotSleepPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.Header().Set("Retry-After", "10")
			w.WriteHeader(http.StatusTooManyRequests)
		}, ehrhttp.Config{RetryAttempts: 3})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		resp, err := getCtx(t, ctx, c, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		if el := time.Since(start); resp.StatusCode != http.StatusTooManyRequests || el != 0 {
			t.Errorf("status %d after %v on the bubble's clock, want the 429 at once", resp.StatusCode, el)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("hits %d", n)
		}
	})
}

func TestDo_LatencyBeyondTimeoutIsEHRTimeout(t *testing.T) {
	done := make(chan struct{})
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		select { // never answers: only the client's time-out can end an attempt
		case <-done:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(done) })
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{Timeout: 40 * time.Millisecond, RetryAttempts: 2}, ehrhttp.WithSleep(s.sleep))
	_, err := get(t, c, "/Patient")
	e := wantCoreError(t, err, core.KindTimeout, "ehr_timeout")
	if !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("cause %v does not wrap context.DeadlineExceeded", e.Err)
	}
	if n := srv.hits.Load(); n != 3 {
		t.Errorf("hits %d, want 3", n)
	}
	if d := s.all(); len(d) != 2 {
		t.Errorf("waits %v, want one before each of the 2 retries", d)
	}
}

func TestDo_HungConnectionTimesOutWithoutLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-done // hung: ignores the client going away
	}))
	tr := &http.Transport{}
	c, err := ehrhttp.New(ehrhttp.Config{Name: "clinic-a", BaseURL: srv.URL, Timeout: 50 * time.Millisecond, RetryAttempts: 1},
		ehrhttp.WithHTTPClient(&http.Client{Transport: tr}), ehrhttp.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	// The server never answers: only the 50 ms time-out can end the call.
	_, err = get(t, c, "/Patient")
	wantCoreError(t, err, core.KindTimeout, "ehr_timeout")

	close(done)
	srv.Close()
	tr.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestDo_CallerDeadlineEndsTheCall(t *testing.T) {
	done := make(chan struct{})
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		select {
		case <-done:
		case <-r.Context().Done():
		}
	})
	t.Cleanup(func() { close(done) })
	// The server never answers and an attempt has an hour: only the
	// caller's 50 ms can end the call.
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{Timeout: time.Hour, RetryAttempts: 3}, ehrhttp.WithSleep(s.sleep))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := getCtx(t, ctx, c, "/Patient")
	wantCoreError(t, err, core.KindTimeout, "ehr_timeout")
	// At most one hit: on a slow machine the deadline may pass before the
	// request reaches the server. No wait asked: no retry was planned.
	if n := srv.hits.Load(); n > 1 {
		t.Errorf("hits %d, want at most 1 (no retry past the caller's deadline)", n)
	}
	if d := s.all(); len(d) != 0 {
		t.Errorf("waits %v past the caller's deadline, want none", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	_, err = getCtx(t, ctx, c, "/Patient")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call: %v, want it to wrap context.Canceled", err)
	}
}

func TestDo_DroppedConnectionIsUnreachable(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 2, Auth: ehrhttp.AuthConfig{Type: "basic", Username: "u", Password: "p4ss-value"}},
		ehrhttp.WithSleep(s.sleep))
	_, err := get(t, c, "/Patient")
	wantCoreError(t, err, core.KindBadGateway, "ehr_unreachable")
	if n := srv.hits.Load(); n != 3 {
		t.Errorf("hits %d, want 3", n)
	}
	if strings.Contains(err.Error(), "p4ss-value") {
		t.Errorf("error leaks the password: %v", err)
	}
}

func TestDo_UnreachableHostIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	c, err := ehrhttp.New(ehrhttp.Config{Name: "clinic-a", BaseURL: base, RetryAttempts: 1},
		ehrhttp.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, c.URL("/metadata", nil), nil)
	_, err = c.Do(context.Background(), req)
	wantCoreError(t, err, core.KindBadGateway, "ehr_unreachable")
}

func TestDo_RetriesOnlyReplayableBodies(t *testing.T) {
	var bodies []string
	var mu sync.Mutex
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		http.Error(w, "boom", http.StatusInternalServerError)
	})
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 1}, ehrhttp.WithSleep(s.sleep))

	req, _ := http.NewRequest(http.MethodPost, c.URL("/Appointment", nil), strings.NewReader(`{"a":1}`))
	resp, err := c.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	req, _ = http.NewRequest(http.MethodPost, c.URL("/Appointment", nil), io.NopCloser(strings.NewReader(`{"b":2}`)))
	resp, err = c.Do(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	if want := []string{`{"a":1}`, `{"a":1}`, `{"b":2}`}; fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Errorf("bodies %q, want %q (the replayable body twice, the other once)", bodies, want)
	}
}

// In synctest bubbles: the limiter reads the bubble's clock, which moves
// only while the client waits on a timer, so the turns are exact.
func TestDo_RateLimitBeyondTimeoutIsRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "ok") },
			ehrhttp.Config{RequestsPerMinute: 60, Timeout: 50 * time.Millisecond, RetryAttempts: 2})
		resp, err := get(t, c, "/Patient")
		if err != nil {
			t.Fatal(err)
		}
		readBody(t, resp)
		start := time.Now()
		_, err = get(t, c, "/Patient")
		e := wantCoreError(t, err, core.KindRateLimited, "rate_limited")
		if e.RetryAfter <= 0 || e.RetryAfter > time.Second {
			t.Errorf("RetryAfter %v, want within (0, 1 s]", e.RetryAfter)
		}
		if el := time.Since(start); el != 0 {
			t.Errorf("rate_limited after %v on the bubble's clock, want at once", el)
		}
		if n := hits.Load(); n != 1 {
			t.Errorf("hits %d, want 1", n)
		}
	})
}

func TestDo_RateLimitWaitsWithinTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		// 120 per minute: a burst of 2, then one every 500 ms.
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "ok") },
			ehrhttp.Config{RequestsPerMinute: 120, Timeout: 2 * time.Second})
		start := time.Now()
		for i := range 3 {
			resp, err := get(t, c, "/Patient")
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			readBody(t, resp)
			if el, want := time.Since(start), time.Duration(max(i-1, 0))*500*time.Millisecond; el != want {
				t.Errorf("call %d done after %v on the bubble's clock, want %v", i, el, want)
			}
		}
		if n := hits.Load(); n != 3 {
			t.Errorf("hits %d, want 3", n)
		}
	})
}
