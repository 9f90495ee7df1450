package postgres

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the store's spans.
const tracerName = "github.com/carebridge/carebridge/adapters/postgres"

// traceCommit makes the span of one audit commit (a transaction of the
// writer, from the forming of its batch to its answer): "audit commit",
// with the number of events and whether they committed; never an event's
// content. A commit of one request's event is a child of that request's
// span; a grouped commit is a root span linked to the span of every
// request it holds.
func (l *AuditLog) traceCommit(calls []*auditCall, err error) {
	if l.commits == nil {
		return
	}
	ctx := context.Background()
	opts := []trace.SpanStartOption{trace.WithTimestamp(l.since), trace.WithSpanKind(trace.SpanKindClient)}
	if len(calls) == 1 && calls[0].caller.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, calls[0].caller)
	} else {
		links := make([]trace.Link, 0, len(calls))
		for _, c := range calls {
			if c.caller.IsValid() {
				links = append(links, trace.Link{SpanContext: c.caller})
			}
		}
		opts = append(opts, trace.WithLinks(links...), trace.WithNewRoot())
	}
	_, span := l.commits.Start(ctx, "audit commit", opts...)
	outcome := "committed"
	if err != nil {
		outcome = "failed"
		span.SetStatus(codes.Error, outcome)
	}
	span.SetAttributes(attribute.String("db.system.name", "postgresql"),
		attribute.Int("audit.events", len(calls)), attribute.String("audit.outcome", outcome))
	span.End()
}
