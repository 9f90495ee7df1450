package test

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
)

// A search's trace: the request's server span, under it one client span
// per EHR call and the audit commit, none of them holding the query; the
// traceparent reaches only the EHR whose propagate_trace is on.
func TestTracing_SearchSpansAreParentedAndFreeOfPatientData(t *testing.T) {
	// Markers are long and distinctive: no id or timestamp can hold them.
	const family, given, birth, mrn = "Qzvtracefamilyx", "Trcgivenzqk", "1911-11-11", "MRN-trcq7zk4"
	w := newWorld(t)
	open := newFakeEHR(t, "clinica", fhirPatient("trcpatient-q7z1", family, given, birth, mrn))
	closed := newFakeEHR(t, "clinicb", fhirPatient("trcpatient-q7z2", family, given, birth, mrn))
	yaml, env := ehrYAML(2000, open, closed)
	yaml = strings.Replace(yaml, "retry_attempts: 1\n", "retry_attempts: 1\n    propagate_trace: true\n", 1) // clinica only
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := w.start(func(c *app.Config) { c.EHR, c.Tracing.Provider = cfg, tp })

	r, ans := s.search(w.token("alice"), `{"query":"`+family+` `+birth+`","pagination":{"page":1,"limit":20}}`)
	if r.status != 200 || len(ans.Data.Results) == 0 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	s.stop() // every request has finished: its spans have ended

	var server sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "POST /api/v1/search" {
			server = sp
		}
	}
	if server == nil {
		t.Fatal("no server span for the search")
	}
	ehrCalls := map[string]sdktrace.ReadOnlySpan{}
	audited := false
	for _, sp := range rec.Ended() {
		for _, m := range []string{family, strings.ToLower(family), given, birth, mrn, "trcpatient-q7z"} {
			if strings.Contains(sp.Name(), m) {
				t.Errorf("span name %q holds %q", sp.Name(), m)
			}
			for _, kv := range sp.Attributes() {
				if strings.Contains(kv.Value.Emit(), m) {
					t.Errorf("span %q attribute %s = %q holds %q", sp.Name(), kv.Key, kv.Value.Emit(), m)
				}
			}
		}
		switch sp.Name() {
		case "GET /Patient":
			var system string
			for _, kv := range sp.Attributes() {
				if kv.Key == "ehr.system" {
					system = kv.Value.AsString()
				}
			}
			ehrCalls[system] = sp
			if sp.Parent().SpanID() != server.SpanContext().SpanID() || sp.SpanKind() != trace.SpanKindClient {
				t.Errorf("the EHR call of %s is not a client span under the request's", system)
			}
		case "audit commit":
			tied := sp.Parent().SpanID() == server.SpanContext().SpanID()
			for _, l := range sp.Links() {
				tied = tied || l.SpanContext.SpanID() == server.SpanContext().SpanID()
			}
			audited = audited || tied
		}
	}
	if len(ehrCalls) != 2 {
		t.Errorf("EHR call spans %v, want one per EHR", ehrCalls)
	}
	if !audited {
		t.Error("no audit commit span tied to the search")
	}
	sc := ehrCalls["clinica"].SpanContext()
	want := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	if got := open.traceparent.Load(); got == nil || *got != want {
		t.Errorf("clinica (propagate_trace: true) got traceparent %v, want %q", got, want)
	}
	if got := closed.traceparent.Load(); got == nil || *got != "" {
		t.Errorf("clinicb (propagate_trace off) got traceparent %v, want none", got)
	}
}
