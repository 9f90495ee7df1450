package ehrhttp_test

import (
	"context"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
)

// recorder is an ehrhttp.Metrics that keeps what it is told.
type recorder struct {
	mu       sync.Mutex
	outcomes map[string]int
	retries  int
	calls    int
	waits    []time.Duration
	states   []int
	// bubble is set in a synctest bubble, whose clock stands still while
	// a goroutine runs: there an answer at once takes no time.
	bubble bool
}

func (r *recorder) Request(outcome string, took time.Duration, retries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.outcomes == nil {
		r.outcomes = map[string]int{}
	}
	r.outcomes[outcome]++
	r.retries += retries
	r.calls++
	if took < 0 || took == 0 && !r.bubble {
		panic("a call took no time")
	}
}

func (r *recorder) RateLimitWait(d time.Duration) {
	r.mu.Lock()
	r.waits = append(r.waits, d)
	r.mu.Unlock()
}

func (r *recorder) BreakerState(s int) {
	r.mu.Lock()
	r.states = append(r.states, s)
	r.mu.Unlock()
}

func (r *recorder) count(outcome string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[outcome]
}

func (r *recorder) state() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) == 0 {
		return -1
	}
	return r.states[len(r.states)-1]
}

// call makes one GET and closes the answer, whatever it is.
func call(t *testing.T, ctx context.Context, c *ehrhttp.Client, path string) error {
	t.Helper()
	resp, err := getCtx(t, ctx, c, path)
	if resp != nil {
		readBody(t, resp)
	}
	return err
}

func TestMetrics_EachOutcomeMovesItsSeries(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/fhir/ok":
			io.WriteString(w, "ok")
		case "/fhir/missing":
			http.Error(w, "no", http.StatusNotFound)
		case "/fhir/busy":
			w.Header().Set("Retry-After", "0")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case "/fhir/down":
			http.Error(w, "down", http.StatusInternalServerError)
		case "/fhir/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		case "/fhir/drop":
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}
	})
	m := &recorder{}
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 1, Timeout: 100 * time.Millisecond, Metrics: m},
		ehrhttp.WithSleep(s.sleep), ehrhttp.WithBreaker(100, time.Minute))
	if m.state() != ehrhttp.BreakerClosed {
		t.Fatalf("New reported breaker state %d, want closed", m.state())
	}
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		ctx     context.Context
		path    string
		outcome string
		retries int
	}{
		{ctx, "/ok", ehrhttp.OutcomeSuccess, 0},
		{ctx, "/missing", ehrhttp.OutcomeClientError, 0},
		{ctx, "/busy", ehrhttp.OutcomeRateLimited, 1},
		{ctx, "/down", ehrhttp.OutcomeServerError, 1},
		{ctx, "/slow", ehrhttp.OutcomeTimeout, 1},
		{ctx, "/drop", ehrhttp.OutcomeNetworkError, 1},
		{cancelled, "/ok", ehrhttp.OutcomeCanceled, 0},
	} {
		before := m.retries
		_ = call(t, tc.ctx, c, tc.path)
		if n := m.count(tc.outcome); n != 1 {
			t.Errorf("%s: outcome %s counted %d times, want 1 (all: %v)", tc.path, tc.outcome, n, m.outcomes)
		}
		if got := m.retries - before; got != tc.retries {
			t.Errorf("%s: %d retries, want %d", tc.path, got, tc.retries)
		}
	}
	if m.calls != 7 {
		t.Errorf("%d calls measured, want 7", m.calls)
	}
}

func TestMetrics_BreakerOpenShowsInItsStateAndOutcome(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	m := &recorder{}
	c := newClient(t, srv.Server, ehrhttp.Config{Metrics: m}, ehrhttp.WithBreaker(2, time.Minute))
	for range 2 {
		_ = call(t, context.Background(), c, "/Patient")
	}
	if m.state() != ehrhttp.BreakerOpen {
		t.Fatalf("breaker state %d after 2 failures, want open (%d)", m.state(), ehrhttp.BreakerOpen)
	}
	err := call(t, context.Background(), c, "/Patient")
	wantCoreError(t, err, core.KindUnavailable, "circuit_open")
	if m.count(ehrhttp.OutcomeCircuitOpen) != 1 || m.count(ehrhttp.OutcomeServerError) != 2 {
		t.Errorf("outcomes %v, want 2 server_error and 1 circuit_open", m.outcomes)
	}
}

func TestMetrics_BreakerHalfOpenAndClosedAgain(t *testing.T) {
	var mu sync.Mutex
	status := http.StatusServiceUnavailable
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
	})
	m := &recorder{}
	c := newClient(t, srv.Server, ehrhttp.Config{Metrics: m}, ehrhttp.WithBreaker(1, 20*time.Millisecond))
	_ = call(t, context.Background(), c, "/Patient")
	mu.Lock()
	status = http.StatusOK
	mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for m.state() != ehrhttp.BreakerClosed && time.Now().Before(deadline) {
		_ = call(t, context.Background(), c, "/Patient")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	want := []int{ehrhttp.BreakerClosed, ehrhttp.BreakerOpen, ehrhttp.BreakerHalfOpen, ehrhttp.BreakerClosed}
	if len(m.states) != len(want) {
		t.Fatalf("states %v, want %v", m.states, want)
	}
	for i := range want {
		if m.states[i] != want[i] {
			t.Fatalf("states %v, want %v", m.states, want)
		}
	}
}

func TestMetrics_RateLimitWaitsAndRefusals(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	// 600 per minute: a burst of 10, then one every 100 ms.
	m := &recorder{}
	c := newClient(t, srv.Server, ehrhttp.Config{RequestsPerMinute: 600, Timeout: time.Second, Metrics: m})
	const calls = 15 // 5 past the burst: at least one waits, however slow the machine
	for i := range calls {
		if err := call(t, context.Background(), c, "/Patient"); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	m.mu.Lock()
	waits := append([]time.Duration(nil), m.waits...)
	m.mu.Unlock()
	if len(waits) == 0 || len(waits) > calls-10 {
		t.Errorf("rate-limit waits %v, want 1 to %d", waits, calls-10)
	}
	for _, d := range waits {
		if d <= 0 || d > 200*time.Millisecond {
			t.Errorf("rate-limit wait %v, want (0, 100 ms] or so", d)
		}
	}
	if m.count(ehrhttp.OutcomeSuccess) != calls {
		t.Errorf("outcomes %v", m.outcomes)
	}

	// A turn past the time-out is refused, not waited.
	r := &recorder{}
	c = newClient(t, srv.Server, ehrhttp.Config{RequestsPerMinute: 60, Timeout: 50 * time.Millisecond, Metrics: r})
	_ = call(t, context.Background(), c, "/Patient")
	err := call(t, context.Background(), c, "/Patient")
	wantCoreError(t, err, core.KindRateLimited, "rate_limited")
	if r.count(ehrhttp.OutcomeRateLimited) != 1 || len(r.waits) != 0 {
		t.Errorf("outcomes %v, waits %v: want one rate_limited and no wait", r.outcomes, r.waits)
	}
}

func TestMetrics_NilMetricsIsFine(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	c := newClient(t, srv.Server, ehrhttp.Config{})
	if err := call(t, context.Background(), c, "/Patient"); err != nil {
		t.Fatal(err)
	}
}
