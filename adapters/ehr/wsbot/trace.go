package wsbot

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core"
)

// endSpan ends a call's span (ehrclient.EndSpan): a bot call is one
// attempt; its outcome is one of ehrhttp's, told from the error's kind and
// code, never its text (which can quote the bot).
func (c *Client) endSpan(ctx context.Context, span trace.Span, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	o := callOutcome(ctx, err)
	failed := o != "success" && o != "client_error" && o != "canceled"
	ehrclient.EndSpan(span, 1, o, c.cb, failed)
}

// callOutcome classifies a call as ehrhttp.Outcomes do.
func callOutcome(ctx context.Context, err error) string {
	if err == nil {
		return "success"
	}
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return "canceled"
	}
	var ce *core.Error
	if !errors.As(err, &ce) {
		return "error"
	}
	switch ce.Code {
	case "circuit_open":
		return "circuit_open"
	case "ehr_unreachable":
		return "network_error"
	case "ehr_auth_failed":
		return "auth_error"
	}
	switch ce.Kind {
	case core.KindNotFound, core.KindInvalid, core.KindConflict:
		return "client_error"
	case core.KindTimeout:
		return "timeout"
	case core.KindRateLimited:
		return "rate_limited"
	case core.KindInternal:
		return "error"
	}
	return "server_error"
}
