package httpapi

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core/storage"
)

func TestTrace_OneServerSpanPerRequestNamedByItsRoute(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	st := &StorageMock{DownloadFunc: func(context.Context, int64, *storage.ByteRange) (*storage.Download, error) {
		return download("\x89PNG-data", false, 0), nil
	}}
	s := New(Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: st,
		Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil }, Tracer: tp})

	const marker = "Qzvmarkerfamily"
	parent := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	w := do(t, s, "GET", "/cloud-blob/download/987654321?name="+marker, nil,
		"traceparent", parent, "X-Request-Id", "req-trace-1", "X-Note", marker)
	if w.Code != 200 {
		t.Fatalf("download answered %d", w.Code)
	}
	do(t, s, "GET", "/no/such/"+marker, nil)

	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per request", len(spans))
	}
	dl := spans[0]
	if dl.Name() != "GET /cloud-blob/download/{id}" || dl.SpanKind() != trace.SpanKindServer {
		t.Errorf("span %q kind %v, want the server span GET /cloud-blob/download/{id}", dl.Name(), dl.SpanKind())
	}
	if dl.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || dl.Parent().SpanID().String() != "00f067aa0ba902b7" {
		t.Errorf("span is not a child of the caller's traceparent: trace %s parent %s", dl.SpanContext().TraceID(), dl.Parent().SpanID())
	}
	want := map[attribute.Key]string{"http.request.method": "GET", "http.route": "/cloud-blob/download/{id}",
		"http.response.status_code": "200", "carebridge.request_id": "req-trace-1"}
	got := map[attribute.Key]string{}
	for _, kv := range dl.Attributes() {
		got[kv.Key] = kv.Value.Emit()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if none := spans[1]; none.Name() != "GET" {
		t.Errorf("an unmatched request's span is %q, want GET", none.Name())
	}
	for _, sp := range spans {
		for _, kv := range sp.Attributes() {
			if v := kv.Value.Emit(); strings.Contains(v, marker) || strings.Contains(v, "987654321") {
				t.Errorf("span %q attribute %s = %q holds the URL, its query or a header", sp.Name(), kv.Key, v)
			}
		}
		if strings.Contains(sp.Name(), marker) {
			t.Errorf("span name %q holds the URL", sp.Name())
		}
	}
}

func TestTrace_NoTracerNoSpan(t *testing.T) {
	s := newTestServer(t, &StorageMock{})
	if s.tracer != nil {
		t.Fatal("a server without Config.Tracer has a tracer")
	}
	if w := do(t, s, "GET", "/healthz", nil); w.Code != 200 {
		t.Errorf("healthz answered %d", w.Code)
	}
}
