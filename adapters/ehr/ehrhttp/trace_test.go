package ehrhttp_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
)

// recorded is a tracer provider that keeps every ended span in memory.
func recorded(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// headerLog keeps the traceparent header of every request a fake EHR got.
type headerLog struct {
	mu  sync.Mutex
	got []string
}

func (h *headerLog) add(r *http.Request) {
	h.mu.Lock()
	h.got = append(h.got, r.Header.Get("traceparent"))
	h.mu.Unlock()
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.got...)
}

// The marker stands for patient data in a query: it must reach the EHR
// and nothing of the trace.
const queryMarker = "Zyxwvutsrqfamily7q3k"

func TestTrace_OneClientSpanPerCallUnderTheCallersSpan(t *testing.T) {
	tp, rec := recorded(t)
	var seen headerLog
	srv := newFakeEHR(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	c := newClient(t, srv.Server, ehrhttp.Config{Tracer: tp, PropagateTrace: true, RetryAttempts: 2}, ehrhttp.WithSleep((&sleeps{}).sleep))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	req, _ := http.NewRequest(http.MethodGet, c.URL("/Appointment/4711", url.Values{"family": {queryMarker}}), nil)
	resp, err := c.Do(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	parent.End()

	var call sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() != "request" {
			if call != nil {
				t.Fatalf("a second EHR span %q: want one per call, retries included", s.Name())
			}
			call = s
		}
	}
	if call == nil {
		t.Fatal("no span for the EHR call")
	}
	if call.Name() != "GET /Appointment/{id}" || call.SpanKind() != trace.SpanKindClient {
		t.Errorf("span %q kind %v, want client span GET /Appointment/{id}", call.Name(), call.SpanKind())
	}
	if call.Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Error("the EHR span is not a child of the caller's span")
	}
	a := attrs(call)
	want := map[attribute.Key]any{
		"ehr.system": "clinic-a", "ehr.operation": "GET /Appointment/{id}", "ehr.attempt": int64(2),
		"ehr.outcome": "success", "ehr.breaker.state": "closed", "http.request.method": "GET",
		"url.template": "/Appointment/{id}", "http.response.status_code": int64(200),
	}
	for k, v := range want {
		if a[k].AsInterface() != v {
			t.Errorf("attribute %s = %v, want %v", k, a[k].AsInterface(), v)
		}
	}
	for k, v := range a {
		if strings.Contains(v.Emit(), queryMarker) || strings.Contains(v.Emit(), "4711") {
			t.Errorf("attribute %s = %q holds the query or the id", k, v.Emit())
		}
	}
	// Each attempt carried the call span's traceparent.
	wantTP := "00-" + call.SpanContext().TraceID().String() + "-" + call.SpanContext().SpanID().String() + "-01"
	if got := seen.all(); len(got) != 2 || got[0] != wantTP || got[1] != wantTP {
		t.Errorf("traceparent at the EHR = %q, want %q on both attempts", got, wantTP)
	}
}

func TestTrace_NoTraceparentWithoutPropagateTrace(t *testing.T) {
	tp, rec := recorded(t)
	var seen headerLog
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) { seen.add(r) })
	c := newClient(t, srv.Server, ehrhttp.Config{Tracer: tp})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	resp, err := getCtx(t, ctx, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	parent.End()
	if got := seen.all(); len(got) != 1 || got[0] != "" {
		t.Errorf("traceparent at the EHR = %q, want none (propagate_trace is off)", got)
	}
	if n := len(rec.Ended()); n != 2 {
		t.Errorf("%d spans, want the caller's and the EHR call's", n)
	}
}

func TestTrace_FailedCallSaysItsOutcomeNotTheError(t *testing.T) {
	tp, rec := recorded(t)
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(queryMarker))
	})
	c := newClient(t, srv.Server, ehrhttp.Config{Tracer: tp}, ehrhttp.WithBreaker(1, 0))
	resp, err := get(t, c, "/Patient/abc/_history/2")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans, want 1", len(spans))
	}
	s := spans[0]
	a := attrs(s)
	if s.Name() != "GET /Patient/{id}/_history/{id}" || a["ehr.outcome"].AsString() != "server_error" ||
		a["ehr.breaker.state"].AsString() != "open" || s.Status().Code != codes.Error || s.Status().Description != "server_error" {
		t.Errorf("span %q %v status %v, want a server_error with the breaker open", s.Name(), a, s.Status())
	}
}

func TestTrace_NoTracerNoSpanNoHeader(t *testing.T) {
	tp, rec := recorded(t)
	var seen headerLog
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) { seen.add(r) })
	c := newClient(t, srv.Server, ehrhttp.Config{PropagateTrace: true})
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	resp, err := getCtx(t, ctx, c, "/Patient")
	if err != nil {
		t.Fatal(err)
	}
	readBody(t, resp)
	parent.End()
	if got := seen.all(); len(got) != 1 || got[0] != "" || len(rec.Ended()) != 1 {
		t.Errorf("without a tracer: traceparent %q, %d spans; want none and the caller's only", got, len(rec.Ended()))
	}
}
