package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestIntegrationAuditLog_OneSpanPerCommitTiedToItsRequests(t *testing.T) {
	db := pgtest.Store(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	l := newAuditLog(t, db, postgres.AuditConfig{Tracer: tp})
	tracer := tp.Tracer("test")

	// Requests one at a time and all at once: each event is in exactly one
	// commit, a child of its request when alone, linked to it when grouped.
	requests := map[trace.SpanID]bool{}
	var mu sync.Mutex
	record := func(i int) {
		ctx, span := tracer.Start(context.Background(), "request")
		mu.Lock()
		requests[span.SpanContext().SpanID()] = true
		mu.Unlock()
		if err := l.Record(ctx, auditEvent(i)); err != nil {
			t.Errorf("record %d: %v", i, err)
		}
		span.End()
	}
	record(0)
	var wg sync.WaitGroup
	for i := 1; i <= 40; i++ {
		wg.Go(func() { record(i) })
	}
	wg.Wait()

	tied := map[trace.SpanID]int{}
	events := 0
	for _, s := range rec.Ended() {
		if s.Name() == "request" {
			continue
		}
		if s.Name() != "audit commit" {
			t.Fatalf("unexpected span %q", s.Name())
		}
		var n int64
		for _, kv := range s.Attributes() {
			switch kv.Key {
			case "audit.events":
				n = kv.Value.AsInt64()
			case "audit.outcome":
				if kv.Value.AsString() != "committed" {
					t.Errorf("commit outcome %q", kv.Value.AsString())
				}
			}
			if v := kv.Value.Emit(); strings.Contains(v, "req-") || strings.Contains(v, "alice") {
				t.Errorf("attribute %s = %q holds an event's content", kv.Key, v)
			}
		}
		events += int(n)
		if n == 1 {
			tied[s.Parent().SpanID()]++
			continue
		}
		if s.Parent().IsValid() || len(s.Links()) != int(n) {
			t.Errorf("a commit of %d events has parent %v and %d links, want a root linked to each request", n, s.Parent().SpanID(), len(s.Links()))
		}
		for _, link := range s.Links() {
			tied[link.SpanContext.SpanID()]++
		}
	}
	if events != 41 || len(tied) != 41 {
		t.Fatalf("commits hold %d events tied to %d requests, want 41 and 41", events, len(tied))
	}
	for id, n := range tied {
		if !requests[id] || n != 1 {
			t.Errorf("span %s tied to %d commits, or not a request", id, n)
		}
	}
}
