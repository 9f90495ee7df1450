package ehrclient

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// The attributes of an EHR call's client span. None of them holds a query,
// a name or any other patient data: the operation is a method and a path
// template ("GET /Appointment/{id}") or a bot action.
const (
	AttrSystem    = attribute.Key("ehr.system")        // the system's name in the EHR systems file
	AttrOperation = attribute.Key("ehr.operation")     // what was asked, as above
	AttrAttempt   = attribute.Key("ehr.attempt")       // the number of the last attempt: 1 without a retry
	AttrOutcome   = attribute.Key("ehr.outcome")       // one of the clients' outcomes (ehrhttp.Outcomes)
	AttrBreaker   = attribute.Key("ehr.breaker.state") // the breaker's state once the call ended: closed, half_open or open
)

// TracerName is the instrumentation scope of the EHR clients' spans.
const TracerName = "github.com/carebridge/carebridge/adapters/ehr"

// StartSpan starts the client span of one call to system, named after
// operation, as a child of ctx's span; tracer nil makes none (ctx is
// returned as it is, the span is a no-op).
func StartSpan(ctx context.Context, tracer trace.Tracer, system, operation string) (context.Context, trace.Span) {
	if tracer == nil {
		return ctx, trace.SpanFromContext(context.Background()) // a no-op span
	}
	return tracer.Start(ctx, operation, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(AttrSystem.String(system), AttrOperation.String(operation)))
}

// EndSpan records how a call ended and ends its span: attempt (the last
// attempt's number), outcome, the breaker's state, and, when failed, an
// error status whose description is the outcome (never an error's text,
// which can quote the EHR). extra attributes are added as they are.
func EndSpan(span trace.Span, attempt int, outcome string, b *Breaker, failed bool, extra ...attribute.KeyValue) {
	if !span.IsRecording() {
		span.End()
		return
	}
	attrs := append([]attribute.KeyValue{AttrAttempt.Int(attempt), AttrOutcome.String(outcome)}, extra...)
	if b != nil {
		attrs = append(attrs, AttrBreaker.String(b.State()))
	}
	span.SetAttributes(attrs...)
	if failed {
		span.SetStatus(codes.Error, outcome)
	}
	span.End()
}
