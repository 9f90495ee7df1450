package ehrhttp

import (
	"context"
	"net/http"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
)

// withBreaker asks the circuit breaker before each attempt (refused: a
// *core.Error "circuit_open") and tells it what the attempt was worth
// (judge).
func withBreaker(cb *ehrclient.Breaker) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			done, err := cb.Allow()
			if err != nil {
				return nil, err
			}
			resp, err := next(ctx, req)
			done(judge(resp, err))
			return resp, err
		}
	}
}

// judge is the breaker's verdict on an attempt: network errors,
// time-outs (the caller's deadline included), 429 and 5xx are failures;
// 2xx, 3xx and other 4xx answers are successes; refusals of the rate
// limiter, token failures, the caller's cancellation and a body that could
// not be replayed say nothing of the EHR and are not counted.
func judge(resp *http.Response, err error) ehrclient.Verdict {
	if err == nil {
		if failedAnswer(resp.StatusCode) {
			return ehrclient.Failure
		}
		return ehrclient.Success
	}
	if f := asFailure(err); f != nil && !f.ehrFault() {
		return ehrclient.Ignore
	}
	return ehrclient.Failure
}

// failedAnswer reports whether an answer is the EHR's failure, counted by
// the breaker and worth another attempt: 429 and 5xx.
func failedAnswer(code int) bool {
	return code == http.StatusTooManyRequests || code >= 500
}
