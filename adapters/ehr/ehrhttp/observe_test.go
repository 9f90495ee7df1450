package ehrhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"
)

type calls struct {
	outcome string
	retries int
}

func (c *calls) Request(outcome string, _ time.Duration, retries int) { *c = calls{outcome, retries} }
func (*calls) RateLimitWait(time.Duration)                            {}
func (*calls) BreakerState(int)                                       {}

func TestObserve_MeasuresAndLogsTheCallItsAttemptsTell(t *testing.T) {
	var buf bytes.Buffer
	m := &calls{}
	attempt := countAttempt(func(context.Context, *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusServiceUnavailable}, nil
	})
	d := observe(slog.New(slog.NewJSONHandler(&buf, nil)), m)(func(ctx context.Context, req *http.Request) (*http.Response, error) {
		_, _ = attempt(ctx, req)
		return attempt(ctx, req)
	})
	req, _ := http.NewRequest(http.MethodPost, "https://ehr.example/fhir/Patient?name=secret", nil)
	if _, err := d(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if *m != (calls{OutcomeServerError, 1}) {
		t.Errorf("metrics got %+v, want server_error with 1 retry", *m)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", buf.String(), err)
	}
	if line["msg"] != "ehr request failed" || line["code"] != "ehr_status" || line["status"] != 503.0 ||
		line["retries"] != 1.0 || line["method"] != "POST" || line["duration_ms"] == nil {
		t.Errorf("log line %v", line)
	}
	if bytes.Contains(buf.Bytes(), []byte("secret")) {
		t.Errorf("the log line holds the query: %s", buf.String())
	}
}

func TestObserve_DoesNotLogAnAnswer(t *testing.T) {
	var buf bytes.Buffer
	d := observe(slog.New(slog.NewJSONHandler(&buf, nil)), nil)(func(context.Context, *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusNotFound}, nil
	})
	if _, err := d(context.Background(), nil); err != nil || buf.Len() != 0 {
		t.Errorf("a 404 answer: err %v, log %q; want neither", err, buf.String())
	}
}
