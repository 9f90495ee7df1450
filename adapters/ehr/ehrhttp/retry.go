package ehrhttp

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryPolicy is when and how long a call waits for another attempt.
type retryPolicy struct {
	retries int                       // attempts after the first
	backoff func(n int) time.Duration // the wait before retry n, when the EHR asks none
	sleep   func(context.Context, time.Duration) error
	auth    authenticator // a 401 drops its credential: one more attempt
	stop    func() bool   // the breaker is open: no more attempts
}

// withRetry makes the call's attempts: another after a network error,
// a time-out, a 429 or a 5xx (up to retries, waiting the backoff or the
// Retry-After the EHR sent, never past ctx's deadline: the last answer or
// failure is returned instead), and one more with a fresh token after a
// 401 of a refreshable credential. Only requests that can be replayed are
// retried: GET, HEAD, no body, or a body with GetBody.
func withRetry(p retryPolicy) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			replayable := req.Method == "" || req.Method == http.MethodGet || req.Method == http.MethodHead ||
				req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
			reauth := replayable && p.auth.refreshable()
			ctx = ensureCall(ctx)
			for try := 0; ; {
				resp, err := next(ctx, req)
				if err == nil && resp.StatusCode == http.StatusUnauthorized && reauth {
					reauth = false
					discard(resp)
					p.auth.invalidate(callOf(ctx).gen)
					continue
				}
				if !retryable(resp, err) || !replayable || try >= p.retries || p.stop() {
					return resp, err
				}
				delay, ok := p.delay(ctx, try, resp)
				if !ok {
					return resp, err
				}
				if resp != nil {
					discard(resp)
				}
				if err := p.sleep(ctx, delay); err != nil {
					return nil, &failure{kind: failCaller, err: err}
				}
				try++
			}
		}
	}
}

// retryable reports whether an attempt's answer or failure is worth
// another: 429, 5xx, a network error or a time-out.
func retryable(resp *http.Response, err error) bool {
	if err != nil {
		f := asFailure(err)
		return f != nil && f.ehrFault()
	}
	return failedAnswer(resp.StatusCode)
}

// delay is the wait before retry n: the Retry-After resp asks (at most
// MaxRetryAfter), else the backoff. ok is false when ctx's deadline comes
// first.
func (p retryPolicy) delay(ctx context.Context, n int, resp *http.Response) (d time.Duration, ok bool) {
	d = p.backoff(n)
	if resp != nil {
		if ra, ok := RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			d = min(ra, MaxRetryAfter)
		}
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d {
		return 0, false
	}
	return d, true
}

// fullJitter returns the wait before retry n (0 for the first retry): a
// random duration in [0, min(ceiling, base·2^n)].
func fullJitter(base, ceiling time.Duration) func(n int) time.Duration {
	return func(n int) time.Duration {
		ceil := ceiling
		if n >= 0 && n < 63 && base <= ceiling>>n {
			ceil = base << n
		}
		return rand.N(ceil + 1)
	}
}

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP date,
// at most 24 hours (callers cap it further). ok is false when it is absent
// or unreadable; "0" and a date in the past are 0 with ok true. It is the
// one parser of the header for every EHR adapter.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if s, err := strconv.ParseInt(h, 10, 64); err == nil {
		if s < 0 {
			return 0, false
		}
		return time.Duration(min(s, int64(maxRetryAfterHeader/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfterHeader), true
	}
	return 0, false
}

// maxRetryAfterHeader bounds what RetryAfter returns.
const maxRetryAfterHeader = 24 * time.Hour

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
