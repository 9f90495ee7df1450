package nats

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func TestIntegrationPublish_MessagesCarryTheirSpansTraceparent(t *testing.T) {
	js := fresh(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := New(ctx, testURL(), nil, WithTracer(tp))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(p.Close)

	ctx, relay := tp.Tracer("test").Start(ctx, "relay")
	msgs := messages(2)
	if err := p.Publish(ctx, msgs); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	relay.End()

	spans := map[string]trace.SpanContext{} // by message id
	for _, s := range rec.Ended() {
		if s.Name() == "relay" {
			continue
		}
		var id string
		for _, kv := range s.Attributes() {
			if kv.Key == "messaging.message.id" {
				id = kv.Value.AsString()
			}
		}
		if s.SpanKind() != trace.SpanKindProducer || s.Parent().SpanID() != relay.SpanContext().SpanID() || s.Status().Code != 0 {
			t.Errorf("span %q: kind %v, status %v, want an acknowledged producer span under the relay's", s.Name(), s.SpanKind(), s.Status())
		}
		spans[id] = s.SpanContext()
	}
	for i, m := range read(t, js, 2) {
		sc, ok := spans[msgs[i].ID]
		if !ok {
			t.Fatalf("no span for event %s", msgs[i].ID)
		}
		want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
		if got := m.Headers().Get("traceparent"); got != want {
			t.Errorf("message %d traceparent %q, want its span's %q", i, got, want)
		}
	}
}

func TestIntegrationPublish_NoTracerNoTraceparent(t *testing.T) {
	js := fresh(t)
	p := newPublisher(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "relay")
	if err := p.Publish(ctx, messages(1)); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	span.End()
	if got := read(t, js, 1)[0].Headers().Get("traceparent"); got != "" {
		t.Errorf("traceparent %q without a tracer", got)
	}
}
