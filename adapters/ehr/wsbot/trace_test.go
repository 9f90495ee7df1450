package wsbot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

func TestClient_OneSpanPerCallWithoutPatientData(t *testing.T) {
	srv := wsbottest.Start(t)
	srv.SetDelay("patients.search", 2*time.Second)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.CallTimeout = 100 * time.Millisecond
		cfg.Tracer = tp
	})
	ctx, parent := tp.Tracer("test").Start(t.Context(), "request")
	_, err := c.GetAppointment(ctx, "no-such-appointment")
	if err == nil {
		t.Fatal("a missing appointment was found")
	}
	_, err = c.SearchPatients(ctx, ehr.PatientQuery{Text: "Qwzmarkerfamily", BirthDate: "1911-11-11"})
	if err == nil {
		t.Fatal("a slow search did not time out")
	}
	parent.End()

	byOp := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		for _, kv := range s.Attributes() {
			for _, m := range []string{"Qwzmarker", "qwzmarker", "1911-11-11", "no-such-appointment"} {
				if strings.Contains(kv.Value.Emit(), m) || strings.Contains(s.Name(), m) {
					t.Errorf("span %q attribute %s holds %q", s.Name(), kv.Key, m)
				}
			}
		}
		if s.Name() != "request" {
			byOp[s.Name()] = s
			if s.Parent().SpanID() != parent.SpanContext().SpanID() || s.SpanKind() != trace.SpanKindClient {
				t.Errorf("span %q is not a client span under the caller's", s.Name())
			}
		}
	}
	search, ok := byOp["patients.search"]
	if !ok || len(byOp) != 2 {
		t.Fatalf("spans %v, want one per call", byOp)
	}
	want := map[string]string{"ehr.system": "clinic-bot", "ehr.operation": "patients.search", "ehr.outcome": "timeout",
		"ehr.breaker.state": "closed", "ehr.attempt": "1"}
	for _, kv := range search.Attributes() {
		if w, ok := want[string(kv.Key)]; ok && kv.Value.Emit() != w {
			t.Errorf("search span %s = %q, want %q", kv.Key, kv.Value.Emit(), w)
		}
		delete(want, string(kv.Key))
	}
	if len(want) > 0 || search.Status().Code != codes.Error {
		t.Errorf("search span lacks %v or its error status (%v)", want, search.Status())
	}
}
