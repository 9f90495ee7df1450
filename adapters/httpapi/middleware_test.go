package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/storage"
)

func TestObserve_PanicLogsItsStackAndTheAccessLogHasDurationMS(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{
		Log:  slog.New(slog.NewJSONHandler(&logs, nil)),
		Auth: tokens{},
		Storage: &StorageMock{MetadataFunc: func(context.Context, int64) (storage.Blob, error) {
			panic("boom in the handler")
		}},
		Registry: prometheus.NewRegistry(),
		Ready:    func(context.Context) error { return nil },
	})
	rec := do(t, s, "GET", "/cloud-blob/metadata/7", nil, "X-Request-Id", "req-panic")
	if rec.Code != 500 {
		t.Fatalf("status %d, want 500: %s", rec.Code, rec.Body)
	}

	var panicLine, access map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		switch m["msg"] {
		case "panic":
			panicLine = m
		case "request":
			access = m
		}
	}
	if panicLine == nil || access == nil {
		t.Fatalf("want a panic line and an access-log line:\n%s", logs.String())
	}
	stack, _ := panicLine["stack"].(string)
	if panicLine["level"] != "ERROR" || panicLine["panic"] != "boom in the handler" || panicLine["request_id"] != "req-panic" ||
		!strings.Contains(stack, "goroutine ") || !strings.Contains(stack, "TestObserve_PanicLogsItsStack") {
		t.Errorf("panic line %v", panicLine)
	}
	if ms, ok := access["duration_ms"].(float64); !ok || ms < 0 || access["duration"] != nil || access["status"] != 500.0 {
		t.Errorf("access-log line %v: want duration_ms, a number of milliseconds, and status 500", access)
	}
}
