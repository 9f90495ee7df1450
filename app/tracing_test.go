package app

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/carebridge/carebridge/core/event"
)

func TestTracingFromEnv_OffUnlessAnEndpointOrOTLPIsSet(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string // the protocol; "" is off
		wantErr string
	}{
		{"nothing set", nil, "", ""},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ProtocolHTTP, ""},
		{"a traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c.example/v1/traces"}, ProtocolHTTP, ""},
		{"otlp without endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, ProtocolHTTP, ""},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, ProtocolGRPC, ""},
		{"the traces protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, ProtocolHTTP, ""},
		{"none beats an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, "", ""},
		{"SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, "", ""},
		{"another exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, "", "OTEL_TRACES_EXPORTER: must be otlp or none"},
		{"json", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "",
			"OTEL_EXPORTER_OTLP_PROTOCOL: must be http/protobuf or grpc"},
		{"no URL", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, "",
			"OTEL_EXPORTER_OTLP_ENDPOINT: must be an http:// or https:// URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TracingFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Protocol != tt.want {
				t.Errorf("TracingFromEnv = %+v, %v; want protocol %q", got, err, tt.want)
			}
		})
	}
}

func TestTracing_ExportsOverOTLPHTTPAndFlushesOnClose(t *testing.T) {
	var (
		posts atomic.Int64
		body  atomic.Value
	)
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/v1/traces" {
			b, _ := io.ReadAll(r.Body)
			body.Store(b)
			posts.Add(1)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	// The SDK reads its variables from the process environment.
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_SERVICE_NAME", "carebridge-otlp-test")
	cfg, err := TracingFromEnv(func(k string) string {
		if k == "OTEL_EXPORTER_OTLP_ENDPOINT" {
			return collector.URL
		}
		return ""
	})
	if err != nil || cfg.Protocol != ProtocolHTTP {
		t.Fatalf("TracingFromEnv = %+v, %v", cfg, err)
	}
	tr, err := newTracing(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	_, span := tracerOf(tr.provider).Start(context.Background(), "one span")
	span.End()
	tr.close(slog.New(slog.DiscardHandler))
	if posts.Load() != 1 {
		t.Fatalf("%d exports reached the collector by Close, want 1", posts.Load())
	}
	b, _ := body.Load().([]byte)
	for _, want := range []string{"one span", "carebridge-otlp-test"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the export does not hold %q", want)
		}
	}
}

type senderFunc func(context.Context, event.Delivery) event.Result

func (f senderFunc) Send(ctx context.Context, d event.Delivery) event.Result { return f(ctx, d) }

func TestTracedSender_OneSpanPerAttemptWithoutTheURL(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	const url = "https://receiver.example/hook?token=Wqzsecrettokenk"
	s := tracedSender{tracer: tracerOf(tp), Sender: senderFunc(func(context.Context, event.Delivery) event.Result {
		return event.Result{Status: 503, Err: "receiver answered 503 at " + url}
	})}
	s.Send(context.Background(), event.Delivery{Subscription: "sub-1", URL: url, EventID: "evt_1", Attempt: 2})
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	got := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		got[string(kv.Key)] = kv.Value.Emit()
		if strings.Contains(kv.Value.Emit(), "Wqzsecret") || strings.Contains(kv.Value.Emit(), "receiver.example") {
			t.Errorf("attribute %s = %q holds the receiver's URL", kv.Key, kv.Value.Emit())
		}
	}
	want := map[string]string{"event.id": "evt_1", "webhook.subscription": "sub-1", "webhook.attempt": "2",
		"http.response.status_code": "503", "webhook.outcome": "failed"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, got[k], v)
		}
	}
	if spans[0].Name() != "webhook deliver" || spans[0].Status().Code != codes.Error {
		t.Errorf("span %q status %v, want a failed webhook deliver", spans[0].Name(), spans[0].Status())
	}
}
