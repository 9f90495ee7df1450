package ehrhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"golang.org/x/time/rate"
)

// withLimit makes each attempt wait for its turn under lim (nil: no
// limit) before the attempt's time-out starts: the wait is our own
// queueing, not the EHR's time. It waits at most maxWait, and never past
// the caller's deadline; a turn beyond either fails at once with a
// failLimited carrying how far the turn was (rate_limited, which the
// breaker does not count), and the request is not sent; so does a
// deadline that passes while it waits (a race with the check). A caller
// that cancels while waiting ends the attempt as the caller's
// (failCaller). m, when set, is told every wait.
func withLimit(lim *rate.Limiter, maxWait time.Duration, m Metrics) middleware {
	return func(next doer) doer {
		if lim == nil {
			return next
		}
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			wait, err := waitTurn(ctx, lim, maxWait, m)
			switch {
			case errors.Is(err, errTurnTooFar), errors.Is(err, context.DeadlineExceeded):
				return nil, &failure{kind: failLimited, wait: wait, err: err}
			case err != nil:
				return nil, &failure{kind: failCaller, err: err}
			}
			return next(ctx, req)
		}
	}
}

// errTurnTooFar is a turn of the limiter past the wait allowed.
var errTurnTooFar = errors.New("the rate limiter's next turn is past the wait allowed")

// waitTurn waits for the limiter's turn, at most maxWait and within ctx's
// deadline, as rate.Limiter.Wait does. A turn beyond either is
// errTurnTooFar with how far it is (nothing reserved); ctx ending while
// waiting is ctx's error.
func waitTurn(ctx context.Context, lim *rate.Limiter, maxWait time.Duration, m Metrics) (time.Duration, error) {
	now := time.Now()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return 0, fmt.Errorf("%w: reservation refused", errTurnTooFar)
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return 0, nil
	}
	limit := now.Add(maxWait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(limit) {
		limit = dl
	}
	if now.Add(d).After(limit) {
		r.CancelAt(now)
		return d, fmt.Errorf("%w: next turn in %v", errTurnTooFar, d.Round(time.Millisecond))
	}
	if m != nil {
		m.RateLimitWait(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, nil
	case <-ctx.Done():
		r.Cancel()
		return 0, ctx.Err()
	}
}
