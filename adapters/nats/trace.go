package nats

import (
	"context"

	natsgo "github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core/event"
)

// Option adjusts a Publisher.
type Option func(*Publisher)

// WithTracer makes a producer span per published event ("publish
// carebridge.events.<type>": the subject, the event id, whether the stream
// acknowledged it) and puts its W3C traceparent in the message's headers,
// so a consumer continues the trace. nil: neither.
func WithTracer(tp trace.TracerProvider) Option {
	return func(p *Publisher) {
		if tp != nil {
			p.tracer = tp.Tracer("github.com/carebridge/carebridge/adapters/nats")
		}
	}
}

// traceContext is the propagator of the messages' headers: traceparent
// and tracestate, never baggage.
var traceContext = propagation.TraceContext{}

// publishSpans are the spans of one Publish call, one per message, in
// order; ended ones are nil. Without a tracer every method does nothing.
type publishSpans struct {
	ctx    context.Context
	tracer trace.Tracer
	spans  []trace.Span
}

func (p *Publisher) spans(ctx context.Context, n int) *publishSpans {
	s := &publishSpans{ctx: ctx, tracer: p.tracer}
	if p.tracer != nil {
		s.spans = make([]trace.Span, 0, n)
	}
	return s
}

// start starts m's span and injects its traceparent into msg's headers.
func (s *publishSpans) start(m event.Message, msg *natsgo.Msg) {
	if s.tracer == nil {
		return
	}
	subject := Subject(m.Type)
	ctx, span := s.tracer.Start(s.ctx, "publish "+subject, trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.destination.name", subject),
			attribute.String("messaging.message.id", m.ID)))
	traceContext.Inject(ctx, headerCarrier(msg.Header))
	s.spans = append(s.spans, span)
}

// ok ends message i's span as acknowledged.
func (s *publishSpans) ok(i int) { s.finish(i, false) }

// fail ends message i's span as not acknowledged.
func (s *publishSpans) fail(i int) { s.finish(i, true) }

func (s *publishSpans) finish(i int, failed bool) {
	if i >= len(s.spans) || s.spans[i] == nil {
		return
	}
	if failed {
		s.spans[i].SetStatus(codes.Error, "not acknowledged")
	}
	s.spans[i].End()
	s.spans[i] = nil
}

// end ends the spans still open (the call gave up waiting) as failed.
func (s *publishSpans) end() {
	for i := range s.spans {
		s.fail(i)
	}
}

// headerCarrier puts the trace context in NATS headers under the exact
// names W3C gives them ("traceparent"): NATS header names are
// case-sensitive, and http.Header would write "Traceparent".
type headerCarrier natsgo.Header

func (h headerCarrier) Get(key string) string { return natsgo.Header(h).Get(key) }

func (h headerCarrier) Set(key, value string) { h[key] = []string{value} }

func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}
