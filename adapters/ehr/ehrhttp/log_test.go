package ehrhttp_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/test/logtest"
)

// logBuffer collects the JSON lines of a logger built as app builds it.
type logBuffer struct{ logtest.Buffer }

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})).
		With("component", "ehrhttp", "ehr", "clinic-a")
}

// lines decodes every line logged.
func (b *logBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// searchFor is a FHIR search of a marked patient: its URL is patient data.
func searchFor(t *testing.T, c *ehrhttp.Client) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.URL("/Patient", url.Values{
		"name": {"Zzmarkerfamily"}, "birthdate": {"1911-11-11"}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func noMarker(t *testing.T, out string) {
	t.Helper()
	for _, m := range []string{"Zzmarker", "zzmarker", "1911-11-11", "/Patient", "OperationOutcome"} {
		if strings.Contains(out, m) {
			t.Errorf("the log holds %q: %s", m, out)
		}
	}
}

func TestDo_FailedCallLogsOneWarningWithoutPatientData(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		body := `{"resourceType":"OperationOutcome","issue":[{"diagnostics":"no Zzmarkerfamily today"}]}`
		w.Write([]byte(body))
	})
	var logs logBuffer
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 2, Logger: logs.logger()}, ehrhttp.WithSleep(s.sleep))
	resp, err := c.Do(context.Background(), searchFor(t, c))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	lines := logs.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %s", len(lines), logs.String())
	}
	l := lines[0]
	if l["level"] != "WARN" || l["ehr"] != "clinic-a" || l["code"] != "ehr_status" || l["status"] != 503.0 ||
		l["retries"] != 2.0 || l["method"] != "GET" {
		t.Errorf("log line %v", l)
	}
	if _, ok := l["duration_ms"].(float64); !ok {
		t.Errorf("log line %v has no duration_ms", l)
	}
	noMarker(t, logs.String())
}

func TestDo_ErrorLogsItsCodeWithoutTheURL(t *testing.T) {
	srv := newFakeEHR(t, func(_ int64, w http.ResponseWriter, r *http.Request) {
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	})
	var logs logBuffer
	var s sleeps
	c := newClient(t, srv.Server, ehrhttp.Config{RetryAttempts: 1, Logger: logs.logger()}, ehrhttp.WithSleep(s.sleep))
	_, err := c.Do(context.Background(), searchFor(t, c))
	wantCoreError(t, err, core.KindBadGateway, "ehr_unreachable")

	lines := logs.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1: %s", len(lines), logs.String())
	}
	if l := lines[0]; l["level"] != "WARN" || l["code"] != "ehr_unreachable" || l["retries"] != 1.0 || l["status"] != nil || l["error"] == nil {
		t.Errorf("log line %v", l)
	}
	noMarker(t, logs.String())
}

func TestDo_AnswersAndCancellationsAreNotLogged(t *testing.T) {
	srv := newFakeEHR(t, func(n int64, w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/fhir/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{}`))
	})
	var logs logBuffer
	c := newClient(t, srv.Server, ehrhttp.Config{Logger: logs.logger()})
	for _, path := range []string{"/Patient", "/missing"} {
		resp, err := get(t, c, path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Do(ctx, searchFor(t, c)); err == nil {
		t.Fatal("a cancelled call succeeded")
	}
	if out := logs.String(); out != "" {
		t.Errorf("logged %s", out)
	}
}
