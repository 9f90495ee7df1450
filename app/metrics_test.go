package app

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core/ehr"
)

// value is the value of the series name{labels} in reg (a counter, a
// gauge or a histogram's count), and whether it exists.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if len(got) != len(labels) {
				continue
			}
			for k, v := range labels {
				if got[k] != v {
					continue series
				}
			}
			switch {
			case m.Counter != nil:
				return m.GetCounter().GetValue(), true
			case m.Gauge != nil:
				return m.GetGauge().GetValue(), true
			case m.Histogram != nil:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

type searchFunc func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error)

func (f searchFunc) Search(ctx context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error) {
	return f(ctx, r)
}

func TestCountCacheHits_CountsHitsAndMissesOfAnsweredSearches(t *testing.T) {
	reg := prometheus.NewRegistry()
	answers := []struct {
		res *ehr.SearchResult
		err error
	}{
		{&ehr.SearchResult{}, nil},
		{&ehr.SearchResult{CacheHit: true}, nil},
		{&ehr.SearchResult{CacheHit: true}, nil},
		{&ehr.SearchResult{Status: ehr.StatusError}, nil}, // every EHR failed: a miss still
		{nil, errors.New("rate limited")},                 // not a cache question
	}
	i := 0
	s := countCacheHits(searchFunc(func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		a := answers[i]
		i++
		return a.res, a.err
	}), newSearchCacheMetrics(reg))
	for range answers {
		_, _ = s.Search(context.Background(), ehr.SearchRequest{})
	}
	for result, want := range map[string]float64{"hit": 2, "miss": 2} {
		if got, ok := value(t, reg, "carebridge_search_cache_requests_total", map[string]string{"result": result}); !ok || got != want {
			t.Errorf("result=%s: %v (present %v), want %v", result, got, ok, want)
		}
	}
}

func TestEHRMetrics_SeriesOfEachSystemStartAtZeroAndStayBounded(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newEHRMetrics(reg)
	fhir := m.system("clinic-a", false)
	bot := m.system("clinic-bot", true)
	for _, o := range ehrhttp.Outcomes {
		if v, ok := value(t, reg, "carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": o}); !ok || v != 0 {
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
		if got, ok := value(t, reg, c.name, c.labels); !ok || got != c.want {
			t.Errorf("%s%v = %v (present %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := value(t, reg, "carebridge_ehr_requests_total", map[string]string{"ehr": "clinic-a", "outcome": "something new"}); ok {
		t.Error("an unknown outcome made a series")
	}
	if _, ok := value(t, reg, "carebridge_ehr_wsbot_link_up", map[string]string{"ehr": "clinic-a"}); ok {
		t.Error("a FHIR system has a link series")
	}
}

func TestLogEHRSystems_NamesEachSystemWithoutSecrets(t *testing.T) {
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
	cfg, err := ehrconfig.Parse([]byte(file), nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	logEHRSystems(context.Background(), slog.New(slog.NewJSONHandler(&buf, nil)), cfg)
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
