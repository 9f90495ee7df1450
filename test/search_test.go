package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
)

// ehrFile is an EHR systems file for the fake EHRs, with API keys read
// from the environment (env:).
func ehrFile(t *testing.T, timeoutMS int, ehrs ...*fakeEHR) (*ehrconfig.Config, func(string) string) {
	t.Helper()
	yaml, env := ehrYAML(timeoutMS, ehrs...)
	getenv := func(k string) string { return env[k] }
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, getenv)
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, yaml)
	}
	return cfg, getenv
}

// ehrYAML is the text of ehrFile and the environment variables of its
// API keys.
func ehrYAML(timeoutMS int, ehrs ...*fakeEHR) (string, map[string]string) {
	var b strings.Builder
	b.WriteString("ehr_systems:\n")
	env := map[string]string{}
	for _, e := range ehrs {
		fmt.Fprintf(&b, "  - name: %s\n    adapter: fhir\n    base_url: %s/fhir\n    search_endpoint: /Patient\n    search_types: [patient_record]\n    sites: [site-%s]\n", e.name, e.srv.URL, e.name)
		fmt.Fprintf(&b, "    authentication:\n      type: api_key\n      api_key: env:KEY_%s\n", strings.ToUpper(e.name))
		fmt.Fprintf(&b, "    rate_limit: { requests_per_minute: 6000 }\n    timeout: %d\n    retry_attempts: 1\n", timeoutMS)
		env["KEY_"+strings.ToUpper(e.name)] = "key-" + e.name
	}
	return b.String(), env
}

type searchAnswer struct {
	RequestID string `json:"requestId"`
	Status    string `json:"status"`
	Data      struct {
		Results []struct {
			ID      string `json:"id"`
			Source  string `json:"source"`
			Sources []struct {
				Source    string `json:"source"`
				PatientID string `json:"patientId"`
			} `json:"sources"`
			Name struct {
				Family string   `json:"family"`
				Given  []string `json:"given"`
			} `json:"name"`
			RecordType string `json:"recordType"`
		} `json:"results"`
		TotalCount int `json:"totalCount"`
		Page       int `json:"page"`
		Limit      int `json:"limit"`
	} `json:"data"`
	Metadata struct {
		SearchTime string   `json:"searchTime"`
		Sources    []string `json:"sources"`
		CacheHit   bool     `json:"cacheHit"`
		Errors     []struct {
			Source, Code, Message string
		} `json:"errors"`
	} `json:"metadata"`
}

func (s *server) search(token, body string) (response, searchAnswer) {
	s.t.Helper()
	return searchAs[searchAnswer](s, token, body)
}

// searchAs POSTs a search and reads a search answer (200, 502, 504) as A.
func searchAs[A any](s *server, token, body string) (response, A) {
	s.t.Helper()
	r := s.do("POST", "/api/v1/search", token, strings.NewReader(body), "Content-Type", "application/json")
	var a A
	if r.status == 200 || r.status == 502 || r.status == 504 {
		if err := json.Unmarshal(r.body, &a); err != nil {
			s.t.Fatalf("search answer: %v: %s", err, r.body)
		}
	}
	return r, a
}

func twoEHRs(t *testing.T) (*fakeEHR, *fakeEHR) {
	a := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"), fhirPatient("a-2", "Baker", "Al", "1975-06-30", "MRN-2"))
	b := newFakeEHR(t, "clinicb", fhirPatient("b-9", "Lopez", "Ana", "1980-02-01", "MRN-1"), fhirPatient("b-3", "Zimmer", "Zoe", "1990-12-24", "MRN-3"))
	return a, b
}

func TestSearch_MergesTwoEHRsAndCaches(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchCacheTTL, c.SearchRateLimit = cfg, time.Minute, 100 })
	tok := w.token("alice")

	r, ans := s.search(tok, `{"query":"Ana","searchType":"patient_record","filters":{"recordType":"all"},"pagination":{"page":1,"limit":20}}`)
	if r.status != 200 || ans.Status != "success" || ans.Data.TotalCount != 3 || len(ans.Data.Results) != 3 || ans.Metadata.CacheHit ||
		strings.Join(ans.Metadata.Sources, ",") != "clinica,clinicb" || !strings.HasSuffix(ans.Metadata.SearchTime, "ms") || len(ans.RequestID) != 36 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	names := []string{}
	for _, p := range ans.Data.Results {
		names = append(names, p.Name.Family)
	}
	if strings.Join(names, ",") != "Baker,Lopez,Zimmer" || len(ans.Data.Results[1].Sources) != 2 || ans.Data.Results[1].RecordType != "patient" {
		t.Fatalf("results %s", r.body)
	}

	before := a.calls.Load() + b.calls.Load()
	_, again := s.search(tok, `{"query":"ana","pagination":{"page":1,"limit":2}}`)
	_, page2 := s.search(tok, `{"query":"ana","pagination":{"page":2,"limit":2}}`)
	if !again.Metadata.CacheHit || !page2.Metadata.CacheHit || a.calls.Load()+b.calls.Load() != before {
		t.Fatalf("cache: hit %v/%v, EHR calls %d → %d", again.Metadata.CacheHit, page2.Metadata.CacheHit, before, a.calls.Load()+b.calls.Load())
	}
	if len(again.Data.Results) != 2 || len(page2.Data.Results) != 1 || page2.Data.Results[0].ID == again.Data.Results[0].ID || page2.Data.Results[0].ID == again.Data.Results[1].ID {
		t.Fatal("pages overlap")
	}
	_, other := s.search(w.token("bob"), `{"query":"Ana"}`)
	if other.Metadata.CacheHit {
		t.Fatal("bob saw alice's cache entry")
	}
	_, site := s.search(tok, `{"query":"Zoe","filters":{"location":"site-clinicb"}}`)
	if strings.Join(site.Metadata.Sources, ",") != "clinicb" {
		t.Fatalf("site filter asked %v", site.Metadata.Sources)
	}
}

func TestSearch_PartialAndFailedEHRs(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 300, a, b)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchRateLimit = cfg, 1000 })
	tok := w.token("alice")

	b.status.Store(500)
	r, ans := s.search(tok, `{"query":"Ana"}`)
	if r.status != 200 || ans.Status != "partial" || len(ans.Metadata.Errors) != 1 || ans.Metadata.Errors[0].Source != "clinicb" ||
		!strings.Contains(ans.Metadata.Errors[0].Message, "maintenance") || ans.Data.TotalCount != 2 {
		t.Fatalf("partial: %d %s", r.status, r.body)
	}
	a.status.Store(503)
	if r, ans := s.search(tok, `{"query":"Ana"}`); r.status != 502 || ans.Status != "error" || len(ans.Metadata.Errors) != 2 || len(ans.Data.Results) != 0 {
		t.Fatalf("all failed: %d %s", r.status, r.body)
	}
	a.status.Store(0)
	b.status.Store(0)
	a.delay.Store(int64(2 * time.Second))
	b.delay.Store(int64(2 * time.Second))
	// The EHRs answer after 2 s: ehr_timeout is the 300 ms time-out's (no
	// clock read), and no EHR was asked more than twice (the search's own
	// deadline may cut the retry before it is sent).
	callsA, callsB := a.calls.Load(), b.calls.Load()
	if r, ans := s.search(tok, `{"query":"Ana"}`); r.status != 504 || ans.Status != "error" || ans.Metadata.Errors[0].Code != "ehr_timeout" {
		t.Fatalf("all timed out: %d %s", r.status, r.body)
	}
	if da, db := a.calls.Load()-callsA, b.calls.Load()-callsB; da < 1 || da > 2 || db < 1 || db > 2 {
		t.Fatalf("the EHRs were called %d and %d times; want 1 or 2 each (at most one retry)", da, db)
	}
}

func TestSearch_RefusesBadRequests(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	tok := w.token("alice")
	for body, code := range map[string]string{
		`{"searchType":"patient_record"}`:                        "invalid_search",
		`{"query":"Ana","searchType":"lab_result"}`:              "invalid_search",
		`{"query":"Ana","filters":{"dateRange":"2024-13-01/x"}}`: "invalid_search",
		`{"query":"Ana","pagination":{"page":0,"limit":101}}`:    "invalid_search",
		`{"query":"Ana","pagination":{"page":-1}}`:               "invalid_search",
		`{"query":"Ana","pagination":{"page":0}}`:                "invalid_search",
		`{"query":"Ana","pagination":{"limit":0}}`:               "invalid_search",
		`{"query":"Ana","filters":{"recordType":"lab_result"}}`:  "record_type_not_supported",
		`{"query":"Ana","extra":true}`:                           "invalid_json",
		`{"query":"birthdate:yesterday"}`:                        "invalid_search",
	} {
		r, _ := s.search(tok, body)
		if r.status != 400 || r.errorCode(t) != code {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}
	if r := s.do("POST", "/api/v1/search", tok, strings.NewReader(`{"query":"Ana"}`), "Content-Type", "text/plain"); r.status != 415 {
		t.Errorf("text/plain: %d", r.status)
	}
	if r, _ := s.search("", `{"query":"Ana"}`); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
	if a.calls.Load()+b.calls.Load() != 0 {
		t.Fatal("a refused request reached an EHR")
	}
	noEHR := w.start(nil)
	if r, _ := noEHR.search(tok, `{"query":"Ana"}`); r.status != 503 || r.errorCode(t) != "no_ehr_configured" {
		t.Fatalf("without EHR_CONFIG: %d %s", r.status, r.body)
	}
}

func TestSearch_RateLimitHoldsAcrossInstancesWithRedis(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", DB: 9})
	t.Cleanup(func() { rdb.FlushDB(context.Background()); rdb.Close() })
	rdb.FlushDB(context.Background())
	shared := func(c *app.Config) {
		c.EHR, c.RedisURL, c.SearchRateLimit, c.SearchCacheTTL = cfg, "redis://127.0.0.1:6379/9", 3, time.Minute
	}
	one, two := w.start(shared), w.start(shared)
	tok := w.token("carol")

	var statuses []int
	for i, s := range []*server{one, two, one} {
		r, _ := s.search(tok, fmt.Sprintf(`{"query":"Ana %d"}`, i))
		statuses = append(statuses, r.status)
	}
	r, _ := two.search(tok, `{"query":"Ana 4"}`)
	if fmt.Sprint(statuses) != "[200 200 200]" || r.status != 429 || r.errorCode(t) != "rate_limited" || r.header.Get("Retry-After") == "" {
		t.Fatalf("statuses %v then %d %s", statuses, r.status, r.body)
	}
	if r, _ := one.search(w.token("dave"), `{"query":"Ana"}`); r.status != 200 {
		t.Fatalf("another caller was limited: %d", r.status)
	}

	// The cached results in Redis hold no patient data in the clear, and
	// the other instance answers from them.
	keys, err := rdb.Keys(context.Background(), "*search*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no cached search in Redis: %v %v", keys, err)
	}
	for _, k := range keys {
		raw, _ := rdb.Get(context.Background(), k).Bytes()
		if bytes.Contains(raw, []byte("Lopez")) || bytes.Contains(raw, []byte("MRN-1")) {
			t.Fatalf("patient data in the clear under %s", k)
		}
	}
	_, ans := two.search(w.token("dave"), `{"query":"Ana"}`)
	if !ans.Metadata.CacheHit {
		t.Fatal("the second instance did not answer from the shared cache")
	}
}

func TestSearch_ConcurrentCallersGetConsistentAnswers(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchRateLimit = cfg, 0 })
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, ans := s.search(w.token(fmt.Sprint("u", i%4)), `{"query":"Ana"}`)
			if r.status != 200 || ans.Data.TotalCount != 3 {
				errs <- fmt.Sprintf("%d %s", r.status, r.body)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
