package ehrhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"
)

// withTimeout gives each attempt d from the moment it is sent: it covers
// the layers below (the token, the exchange) and the reading of the
// answer's body, which stays readable after Do returns (closing it ends
// the attempt). The rate limiter's wait lies above it (withLimit): our own
// queueing never takes from the EHR's time, so it is never reported as the
// EHR's time-out nor counted by the breaker. It tells the caller's end from the attempt's: a network
// failure past the attempt's deadline (or the caller's) is a time-out;
// any failure after the caller cancelled, or after the caller's deadline
// before the exchange, is the caller's.
func withTimeout(d time.Duration) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			actx, cancel := context.WithTimeout(ctx, d)
			resp, err := next(actx, req)
			if err != nil {
				cancel()
				return nil, whose(ctx, actx, err)
			}
			resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
			return resp, nil
		}
	}
}

// whose refines the failure of an attempt under actx, made for ctx.
func whose(ctx, actx context.Context, err error) error {
	f := asFailure(err)
	if f == nil || f.kind != failNetwork {
		if ctx.Err() != nil {
			return &failure{kind: failCaller, err: ctx.Err()}
		}
		return err
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return &failure{kind: failCaller, err: ctx.Err()}
	case actx.Err() == context.DeadlineExceeded:
		// The attempt's or the caller's deadline passed while the EHR was
		// at work: a time-out the breaker counts.
		return &failure{kind: failTimeout, err: f.err}
	}
	return err
}

// cancelBody ends the attempt's context when the body is closed, so the
// body stays readable after Do returns.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
