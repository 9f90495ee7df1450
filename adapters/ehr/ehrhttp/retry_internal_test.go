package ehrhttp

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestRetryAfter_ParsesSecondsAndDates(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"abc", 0, false},
		{"-1", 0, false},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"12", 12 * time.Second, true},
		{"99999999999", 24 * time.Hour, true},
		{now.Add(4 * time.Second).Format(http.TimeFormat), 4 * time.Second, true},
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour, true},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.header, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFullJitter_StaysWithinTheExponentialCeiling(t *testing.T) {
	base, ceiling := 100*time.Millisecond, 2*time.Second
	next := fullJitter(base, ceiling)
	for n, ceil := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		var top time.Duration
		for range 200 {
			d := next(n)
			if d < 0 || d > ceil {
				t.Fatalf("retry %d waited %v, want within [0, %v]", n, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/2 {
			t.Errorf("retry %d: largest of 200 waits %v, not spread up to %v", n, top, ceil)
		}
	}
	if d := fullJitter(time.Hour, 2*time.Hour)(100); d < 0 || d > 2*time.Hour {
		t.Errorf("large retry number waited %v", d)
	}
}

// tokens is a refreshable authenticator that counts what it is told.
type tokens struct{ dropped []uint64 }

func (*tokens) header(context.Context) (http.Header, uint64, error) { return http.Header{}, 7, nil }
func (*tokens) refreshable() bool                                   { return true }
func (t *tokens) invalidate(gen uint64)                             { t.dropped = append(t.dropped, gen) }

// answers is a doer that answers the statuses in turn (0: a network
// failure), noting the token generation as withAuth does.
func answers(codes ...int) (doer, *int) {
	n := 0
	return func(ctx context.Context, _ *http.Request) (*http.Response, error) {
		code := codes[min(n, len(codes)-1)]
		n++
		callOf(ctx).gen = 7
		if code == 0 {
			return nil, &failure{kind: failNetwork, err: errors.New("reset")}
		}
		return &http.Response{StatusCode: code, Header: http.Header{}, Body: http.NoBody}, nil
	}, &n
}

func TestWithRetry_RetriesTheEHRsFailuresWithinTheBudget(t *testing.T) {
	var waits []time.Duration
	p := retryPolicy{retries: 2, backoff: func(n int) time.Duration { return time.Duration(n+1) * time.Second },
		sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
		auth:  staticAuth{}, stop: func() bool { return false }}
	get, _ := http.NewRequest(http.MethodGet, "https://ehr.example/", nil)
	tests := []struct {
		name  string
		codes []int
		want  int // final status, 0: the network failure
		sent  int
	}{
		{"503 then 200", []int{503, 200}, 200, 2},
		{"429 thrice: the last answer", []int{429}, 429, 3},
		{"network failures: the last failure", []int{0}, 0, 3},
		{"404 is an answer", []int{404, 200}, 404, 1},
	}
	for _, tt := range tests {
		waits = nil
		next, n := answers(tt.codes...)
		resp, err := withRetry(p)(next)(context.Background(), get)
		got := 0
		if err == nil {
			got = resp.StatusCode
		}
		if got != tt.want || *n != tt.sent || len(waits) != tt.sent-1 {
			t.Errorf("%s: status %d (err %v) after %d attempts, waits %v; want %d after %d",
				tt.name, got, err, *n, waits, tt.want, tt.sent)
		}
	}
	post, _ := http.NewRequest(http.MethodPost, "https://ehr.example/", strings.NewReader("x"))
	post.GetBody = nil
	next, n := answers(503, 200)
	if resp, _ := withRetry(p)(next)(context.Background(), post); resp.StatusCode != 503 || *n != 1 {
		t.Errorf("a body without GetBody was sent %d times", *n)
	}
	p.stop = func() bool { return true }
	next, n = answers(503, 200)
	if resp, _ := withRetry(p)(next)(context.Background(), get); resp.StatusCode != 503 || *n != 1 {
		t.Errorf("retried %d times while the breaker is open", *n-1)
	}
}

func TestWithRetry_A401DropsTheTokenOnceAndSendsAgain(t *testing.T) {
	tok := &tokens{}
	p := retryPolicy{retries: 0, backoff: func(int) time.Duration { return 0 },
		sleep: func(context.Context, time.Duration) error { return nil }, auth: tok, stop: func() bool { return false }}
	get, _ := http.NewRequest(http.MethodGet, "https://ehr.example/", nil)
	next, n := answers(401)
	resp, err := withRetry(p)(next)(context.Background(), get)
	if err != nil || resp.StatusCode != 401 || *n != 2 || len(tok.dropped) != 1 || tok.dropped[0] != 7 {
		t.Errorf("401s: status %v err %v after %d attempts, dropped %v; want 401 after 2, token 7 dropped once",
			resp, err, *n, tok.dropped)
	}
}

func TestWithRetry_NeverWaitsPastTheDeadline(t *testing.T) {
	slept := false
	p := retryPolicy{retries: 3, backoff: func(int) time.Duration { return time.Hour },
		sleep: func(context.Context, time.Duration) error { slept = true; return nil },
		auth:  staticAuth{}, stop: func() bool { return false }}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	get, _ := http.NewRequest(http.MethodGet, "https://ehr.example/", nil)
	next, n := answers(503)
	if resp, _ := withRetry(p)(next)(ctx, get); resp.StatusCode != 503 || *n != 1 || slept {
		t.Errorf("a backoff past the deadline: %d attempts, slept %v; want the 503 at once", *n, slept)
	}
}
