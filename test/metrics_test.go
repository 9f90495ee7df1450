package test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/logtest"
)

// metricValue is the value of the series written exactly as series in a
// /metrics page, and whether the page has it.
func metricValue(page, series string) (float64, bool) {
	for _, l := range strings.Split(page, "\n") {
		if rest, ok := strings.CutPrefix(l, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			return v, err == nil
		}
	}
	return 0, false
}

func TestMetrics_EHRSeriesOfAStartedApp(t *testing.T) {
	w := newWorld(t)
	a := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	cfg, _ := ehrFile(t, 2000, a)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchCacheTTL = cfg, time.Minute })

	page := string(s.do("GET", "/metrics", "", nil).body)
	for _, series := range []string{
		`carebridge_ehr_requests_total{ehr="clinica",outcome="success"}`,
		`carebridge_ehr_requests_total{ehr="clinica",outcome="circuit_open"}`,
		`carebridge_ehr_retries_total{ehr="clinica"}`,
		`carebridge_ehr_breaker_state{ehr="clinica"}`,
		`carebridge_ehr_request_duration_seconds_count{ehr="clinica"}`,
		`carebridge_ehr_rate_limit_wait_seconds_count{ehr="clinica"}`,
		`carebridge_search_cache_requests_total{result="hit"}`,
		`carebridge_search_cache_requests_total{result="miss"}`,
	} {
		if v, ok := metricValue(page, series); !ok || v != 0 {
			t.Errorf("before any search: %s = %v (present %v), want 0", series, v, ok)
		}
	}

	tok := w.token("alice")
	for range 2 {
		if r, ans := s.search(tok, `{"query":"Ana"}`); r.status != 200 || ans.Status != "success" {
			t.Fatalf("search: %d %s", r.status, r.body)
		}
	}
	a.status.Store(503) // the EHR fails: a fresh search is a server error, retried once
	if r, _ := s.search(w.token("bob"), `{"query":"Ana"}`); r.status != 502 && r.status != 200 {
		t.Fatalf("search of a failing EHR: %d %s", r.status, r.body)
	}

	page = string(s.do("GET", "/metrics", "", nil).body)
	for series, want := range map[string]float64{
		`carebridge_ehr_requests_total{ehr="clinica",outcome="success"}`:      1,
		`carebridge_ehr_requests_total{ehr="clinica",outcome="server_error"}`: 1,
		`carebridge_ehr_retries_total{ehr="clinica"}`:                         1,
		`carebridge_ehr_request_duration_seconds_count{ehr="clinica"}`:        2,
		`carebridge_ehr_breaker_state{ehr="clinica"}`:                         0,
		`carebridge_search_cache_requests_total{result="hit"}`:                1,
		`carebridge_search_cache_requests_total{result="miss"}`:               2,
	} {
		if v, ok := metricValue(page, series); !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", series, v, ok, want)
		}
	}
	if strings.Contains(page, "carebridge_ehr_wsbot_link_up{") {
		t.Error("a FHIR system has a wsbot link series")
	}
}

func TestMetrics_StartUpLogNamesTheEHRSystemsWithoutSecrets(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	var logs logtest.Buffer
	w.startLogging(&logs, func(c *app.Config) { c.EHR = cfg })

	seen := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "EHR system loaded" {
			seen[m["ehr"].(string)] = m
			if strings.Contains(l, a.srv.URL) || strings.Contains(l, b.srv.URL) || strings.Contains(l, "127.0.0.1") {
				t.Errorf("the start-up line names the EHR's URL: %s", l)
			}
		}
	}
	for _, name := range []string{"clinica", "clinicb"} {
		m := seen[name]
		if m == nil || m["level"] != "INFO" || m["adapter"] != "fhir" || m["auth_type"] != "api_key" || m["integration"] != false {
			t.Errorf("start-up line of %s: %v", name, m)
		}
	}
	if len(seen) != 2 {
		t.Errorf("start-up lines for %d systems, want 2", len(seen))
	}
	for _, secret := range []string{"key-clinica", "key-clinicb"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds the API key %s", secret)
		}
	}
}
