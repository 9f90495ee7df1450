package ehrhttp

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

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
