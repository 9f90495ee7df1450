package ehrhttp

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core"
)

// observe measures every call (Metrics.Request) and logs the failed ones
// (see the package documentation); log and m may be nil.
func observe(log *slog.Logger, m Metrics) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			start := time.Now()
			cctx, rec := withCall(ctx)
			resp, err := next(cctx, req)
			took := time.Since(start)
			if log != nil {
				logFailure(ctx, log, req, resp, err, rec, took)
			}
			if m != nil {
				m.Request(outcome(ctx, resp, err), took, max(rec.attempts-1, 0))
			}
			return resp, err
		}
	}
}

// countAttempt records each attempt, and the status of its answer, for
// the call's log line and metrics.
func countAttempt(next doer) doer {
	return func(ctx context.Context, req *http.Request) (*http.Response, error) {
		rec := callOf(ctx)
		rec.attempts++
		resp, err := next(ctx, req)
		if resp != nil {
			rec.status = resp.StatusCode
		}
		return resp, err
	}
}

// outcome classifies a Do call for Metrics.Request.
func outcome(ctx context.Context, resp *http.Response, err error) string {
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return OutcomeCanceled
		}
		var ce *core.Error
		if !errors.As(err, &ce) {
			return OutcomeError
		}
		switch ce.Code {
		case "ehr_timeout":
			return OutcomeTimeout
		case "rate_limited":
			return OutcomeRateLimited
		case "circuit_open":
			return OutcomeCircuitOpen
		case "ehr_unreachable":
			return OutcomeNetworkError
		case "ehr_auth_failed":
			return OutcomeAuthError
		}
		return OutcomeError
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return OutcomeRateLimited
	case code >= 500:
		return OutcomeServerError
	case code >= 400:
		return OutcomeClientError
	}
	return OutcomeSuccess
}

// logFailure writes the WARN line of a failed call (see the package
// documentation): no URL, query or body, which can hold patient data.
func logFailure(ctx context.Context, log *slog.Logger, req *http.Request, resp *http.Response, err error, rec *call, took time.Duration) {
	var code string
	switch {
	case err != nil:
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return // the caller went away: not the EHR's failure
		}
		code = "ehr_error"
		var ce *core.Error
		if errors.As(err, &ce) {
			code = ce.Code
		}
	case resp != nil && failedStatus(resp.StatusCode):
		code = "ehr_status"
	default:
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("code", code))
	if rec.status != 0 {
		attrs = append(attrs, slog.Int("status", rec.status))
	}
	attrs = append(attrs, slog.Int("retries", max(rec.attempts-1, 0)), ehrclient.DurationMS(took))
	if req != nil {
		attrs = append(attrs, slog.String("method", cmp.Or(req.Method, http.MethodGet)))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	log.LogAttrs(ctx, slog.LevelWarn, "ehr request failed", attrs...)
}

// failedStatus reports whether a final answer is a failure of the EHR or
// of its credentials, worth a log line: 401, 403, 429 and 5xx. Other 4xx
// answer the request (not found, conflict, …).
func failedStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden ||
		code == http.StatusTooManyRequests || code >= 500
}
