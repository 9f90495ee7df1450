package ehrsystems

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/test/promtest"
)

func TestEHRMetrics_SeriesOfEachSystemStartAtZeroAndStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newEHRMetrics(reg)
	fhir := m.system("clinic-a", false)
	bot := m.system("clinic-bot", true)
	for _, o := range ehrhttp.Outcomes {
		if v, ok := promtest.Value(t, reg, "carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": o}); !ok || v != 0 {
			t.Errorf("outcome %s: %v, %v; want a series at 0", o, v, ok)
		}
	}
	fhir.Request(ehrhttp.OutcomeServerError, 120*time.Millisecond, 2)
	fhir.Request("something new", time.Millisecond, 0) // not a new series
	fhir.RateLimitWait(50 * time.Millisecond)
	fhir.BreakerState(ehrhttp.BreakerOpen)
	fhir.LinkUp(true) // not a bot: no link series
	bot.LinkUp(true)
	bot.Reconnect()

	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": "server_error"}, 1},
		{"carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": "error"}, 1},
		{"carebridge_ehr_request_duration_seconds", map[string]string{"ehr": "clinic-a"}, 2},
		{"carebridge_ehr_retries_total", map[string]string{"ehr": "clinic-a"}, 2},
		{"carebridge_ehr_rate_limit_wait_seconds", map[string]string{"ehr": "clinic-a"}, 1},
		{"carebridge_ehr_breaker_state", map[string]string{"ehr": "clinic-a"}, 2},
		{"carebridge_ehr_wsbot_link_up", map[string]string{"ehr": "clinic-bot"}, 1},
		{"carebridge_ehr_wsbot_reconnects_total", map[string]string{"ehr": "clinic-bot"}, 1},
	} {
		if got, ok := promtest.Value(t, reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := promtest.Value(t, reg, "carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": "something new"}); ok {
		t.Error("an unknown outcome made a series")
	}
	if _, ok := promtest.Value(t, reg, "carebridge_ehr_wsbot_link_up", map[string]string{"ehr": "clinic-a"}); ok {
		t.Error("a FHIR system has a link series")
	}
}

func TestLogSystems_NamesEachSystemWithoutSecrets(t *testing.T) {
	file := `ehr_systems:
  - name: clinic-a
    adapter: fhir
    base_url: https://fhir.example.org/r4
    search_endpoint: /Patient
    search_types: [patient_record]
    sites: [north]
    authentication:
      type: oauth2
      token_url: https://auth.example.org/token
      client_id: cid-zz
      client_secret: env:CS
    timeout: 1500
  - name: clinic-b
    adapter: fhir
    base_url: https://b.example.org/fhir
    search_endpoint: /Patient
    search_types: [patient_record]
    authentication:
      type: api_key
      api_key: env:AK
integration:
  ehr: clinic-b
`
	env := map[string]string{"CS": "s3cr3t-zz", "AK": "k3y-zz"}
	cfg, err := testKinds().Parse([]byte(file), nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logSystems(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), cfg)
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per system:\n%s", out)
	}
	for _, want := range []string{`"ehr":"clinic-a"`, `"adapter":"fhir"`, `"auth_type":"oauth2"`, `"sites":["north"]`,
		`"search_types":["patient_record"]`, `"integration":false`, `"timeout_ms":1500`} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line %s lacks %s", lines[0], want)
		}
	}
	if !strings.Contains(lines[1], `"integration":true`) || !strings.Contains(lines[1], `"auth_type":"api_key"`) {
		t.Errorf("line %s", lines[1])
	}
	for _, secret := range []string{"s3cr3t", "k3y-zz", "cid-zz", "example.org"} {
		if strings.Contains(out, secret) {
			t.Errorf("the start-up log holds %q: %s", secret, out)
		}
	}
}
