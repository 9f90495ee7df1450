package ehrhttp_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
)

// A turn past the queue's bound (the time-out) is refused at once as
// rate_limited, not sent, and not counted by the breaker: the next call
// whose turn has come reaches the EHR. On the bubble's clock, so that a
// slow round trip on a busy machine cannot become the EHR's time-out.
func TestDo_ATurnPastTheQueueBoundIsRateLimitedNotATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		m := &recorder{bubble: true}
		// 600 a minute: a burst of 10, then one every 100 ms; a time-out of
		// 50 ms, so the 11th call's turn lies past the queue's bound.
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1); io.WriteString(w, "ok") },
			ehrhttp.Config{RequestsPerMinute: 600, Timeout: 50 * time.Millisecond, Metrics: m},
			ehrhttp.WithBreaker(1, time.Hour))
		var refused *core.Error
		for i := 0; refused == nil; i++ {
			if i > 100 {
				t.Fatal("no call was refused by the limiter")
			}
			if err := call(t, t.Context(), c, "/Patient"); err != nil {
				refused = wantCoreError(t, err, core.KindRateLimited, "rate_limited")
			}
		}
		if refused.RetryAfter <= 0 {
			t.Errorf("RetryAfter %v, want the turn's distance", refused.RetryAfter)
		}
		sentBefore := hits.Load()
		// The breaker would refuse at once (circuit_open) had it counted the
		// refusal; closed, the next call waits for a turn and is sent.
		eventuallyOK := false
		for range 50 {
			waitTurn(t, refused.RetryAfter)
			err := call(t, t.Context(), c, "/Patient")
			if err == nil {
				eventuallyOK = true
				break
			}
			refused = wantCoreError(t, err, core.KindRateLimited, "rate_limited")
		}
		if !eventuallyOK || hits.Load() != sentBefore+1 || m.state() != ehrhttp.BreakerClosed {
			t.Errorf("after a refusal: sent %v, hits %d (were %d), breaker %d; want one more sent and the breaker closed",
				eventuallyOK, hits.Load(), sentBefore, m.state())
		}
		if m.count(ehrhttp.OutcomeTimeout) != 0 {
			t.Errorf("outcomes %v: our queue reported as the EHR's time-out", m.outcomes)
		}
	})
}

// waitTurn lets the limiter's turn come (the limiter reads the clock;
// this waits for a turn, it asserts no latency).
func waitTurn(t *testing.T, d time.Duration) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.Context().Done():
	}
}

// Our own rate limiter is a queue in front of the EHR: its wait is not
// the EHR's time. On the bubble's clock, exactly: the EHR answers 1.5 s
// after the send, within a time-out of 2 s, after a wait of 1.5 s in our
// queue; a healthy EHR's breaker stays closed. (The in-process EHR
// answers 504 when the attempt's time-out ends first.)
func TestDo_TheEHRsTimeoutStartsAtTheSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var hits atomic.Int64
		m := &recorder{bubble: true}
		// 40 a minute: a burst of 1, then one every 1.5 s. A breaker that one
		// failure opens, for an hour.
		c := newBubbleClient(t, func(w http.ResponseWriter, r *http.Request) {
			if hits.Add(1) == 2 {
				select {
				case <-time.After(1500 * time.Millisecond):
				case <-r.Context().Done():
					w.WriteHeader(http.StatusGatewayTimeout)
					return
				}
			}
			io.WriteString(w, "ok")
		}, ehrhttp.Config{RequestsPerMinute: 40, Timeout: 2 * time.Second, Metrics: m}, ehrhttp.WithBreaker(1, time.Hour))
		for i := range 2 {
			start := time.Now()
			resp, err := get(t, c, "/Patient")
			if err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
			if body := readBody(t, resp); resp.StatusCode != http.StatusOK || body != "ok" {
				t.Fatalf("call %d: status %d %q; want the EHR's answer within its time-out", i, resp.StatusCode, body)
			}
			if want := time.Duration(i) * 3 * time.Second; time.Since(start) != want {
				t.Errorf("call %d took %v on the bubble's clock, want %v (1.5 s queued, 1.5 s the EHR's)", i, time.Since(start), want)
			}
		}
		if err := call(t, t.Context(), c, "/Patient"); err != nil {
			t.Fatalf("third call: %v; want the breaker closed", err)
		}
		if m.count(ehrhttp.OutcomeSuccess) != 3 || m.state() != ehrhttp.BreakerClosed {
			t.Errorf("outcomes %v, breaker state %d; want 3 successes and closed", m.outcomes, m.state())
		}
	})
}
