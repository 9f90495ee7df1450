package ehrhttp

import (
	"context"
	"io"
	"net/http"
)

// send is the bottom of the stack: one exchange with the EHR over hc,
// under ctx. The first attempt sends req's body, later ones a fresh copy
// (GetBody). A failed exchange is a failNetwork (withTimeout tells
// time-outs and cancellations from it).
func send(hc *http.Client) doer {
	return func(ctx context.Context, req *http.Request) (*http.Response, error) {
		r := req.WithContext(ctx) // a shallow copy: req keeps its body
		rec := callOf(ctx)
		if rec.sent && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, &failure{kind: failBody, err: err}
			}
			r.Body = body
		}
		rec.sent = true
		resp, err := hc.Do(r)
		if err != nil {
			return nil, &failure{kind: failNetwork, err: err}
		}
		return resp, nil
	}
}

// discard drains a little of an unused answer (so its connection can be
// reused) and closes it.
func discard(resp *http.Response) {
	// A failure only costs the connection's reuse; there is nothing to tell.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
}
