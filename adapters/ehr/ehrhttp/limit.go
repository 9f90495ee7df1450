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
// limit) within the attempt's time-out, or fail at once (a failLimited
// carrying how far the turn was) when the turn lies beyond it. m, when
// set, is told every wait.
func withLimit(lim *rate.Limiter, m Metrics) middleware {
	return func(next doer) doer {
		if lim == nil {
			return next
		}
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			if wait, err := waitTurn(ctx, lim, m); err != nil {
				return nil, &failure{kind: failLimited, wait: wait, err: err}
			}
			return next(ctx, req)
		}
	}
}

// waitTurn waits for the limiter within ctx's deadline, as
// rate.Limiter.Wait does, and also reports how long the turn is away when
// it lies beyond the deadline.
func waitTurn(ctx context.Context, lim *rate.Limiter, m Metrics) (time.Duration, error) {
	now := time.Now()
	r := lim.ReserveN(now, 1)
	if !r.OK() {
		return 0, errors.New("rate limit reservation refused")
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return 0, nil
	}
	if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
		r.CancelAt(now)
		return d, fmt.Errorf("next turn in %v is past the time-out", d.Round(time.Millisecond))
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
