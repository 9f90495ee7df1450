package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
)

func newSearchServer(t *testing.T, m *SearchMock) *Server {
	t.Helper()
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: &StorageMock{},
		Business: &BusinessMock{}, Search: m, Registry: prometheus.NewRegistry(),
		Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
}

func searchCall(t *testing.T, s *Server, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	return do(t, s, "POST", "/api/v1/search", strings.NewReader(body), append([]string{"Content-Type", "application/json"}, header...)...)
}

func TestSearch_MapsTheRequestAndAnswersTheSpecShape(t *testing.T) {
	var got ehr.SearchRequest
	m := &SearchMock{SearchFunc: func(_ context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error) {
		got = r
		return &ehr.SearchResult{
			RequestID: "5f0c…", Status: ehr.StatusPartial, TotalCount: 1, Page: 2, Limit: 5, SearchTime: 37 * time.Millisecond,
			Sources: []string{"clinic-a"}, Errors: []ehr.SourceError{{Source: "clinic-b", Code: "ehr_timeout", Message: "clinic-b did not answer in time"}},
			Results: []ehr.Person{{ID: "p1", Sources: []ehr.SourceRef{{Source: "clinic-a", PatientID: "123"}}, Name: ehr.HumanName{Family: "Lopez", Given: []string{"Ana"}},
				BirthDate: "1980-02-01", Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{},
				LastUpdated: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)}},
		}, nil
	}}
	w := searchCall(t, newSearchServer(t, m), `{"query":"given:Ana","searchType":"patient_record","filters":{"dateRange":"2024-01-01/2024-12-31","location":"main","recordType":"all"},"pagination":{"page":2,"limit":5}}`)
	want := ehr.SearchRequest{Query: "given:Ana", SearchType: "patient_record", Location: "main", RecordType: "all",
		UpdatedFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedTo: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC),
		Page: ehr.PageRequest{Page: 2, Limit: 5}}
	if w.Code != 200 || !reflect.DeepEqual(got, want) {
		t.Fatalf("status %d, core got %+v", w.Code, got)
	}
	var body map[string]any
	json.Unmarshal(w.Body.Bytes(), &body)
	data, meta := body["data"].(map[string]any), body["metadata"].(map[string]any)
	item := data["results"].([]any)[0].(map[string]any)
	if body["status"] != "partial" || data["totalCount"] != 1.0 || data["page"] != 2.0 || meta["searchTime"] != "37ms" || meta["cacheHit"] != false ||
		len(meta["errors"].([]any)) != 1 || item["source"] != "clinic-a" || item["recordType"] != "patient" || item["birthDate"] != "1980-02-01" ||
		item["gender"] != nil || item["lastUpdated"] != "2024-05-01T10:00:00Z" || item["name"].(map[string]any)["family"] != "Lopez" {
		t.Fatalf("body %s", w.Body)
	}
}

func TestSearch_StatusesAndErrors(t *testing.T) {
	result := func(status string, codes ...string) *ehr.SearchResult {
		r := &ehr.SearchResult{Status: status, Results: []ehr.Person{}}
		for _, c := range codes {
			r.Errors = append(r.Errors, ehr.SourceError{Source: "x", Code: c})
		}
		return r
	}
	for _, c := range []struct {
		res    *ehr.SearchResult
		err    error
		status int
	}{
		{result(ehr.StatusSuccess), nil, 200},
		{result(ehr.StatusError, "ehr_error", "ehr_timeout"), nil, 502},
		{result(ehr.StatusError, "ehr_timeout", "ehr_timeout"), nil, 504},
		{nil, ehr.ErrNoEHRConfigured, 503},
		{nil, ehr.ErrInvalidSearch.WithMessage("query is required"), 400},
	} {
		m := &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) { return c.res, c.err }}
		if w := searchCall(t, newSearchServer(t, m), `{"query":"x"}`); w.Code != c.status {
			t.Errorf("%+v %v: got %d", c.res, c.err, w.Code)
		}
	}
	limited := *ehr.ErrRateLimited
	limited.RetryAfter = 1500 * time.Millisecond
	m := &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) { return nil, &limited }}
	w := searchCall(t, newSearchServer(t, m), `{"query":"x"}`)
	if e := errEnvelope(t, w); w.Code != 429 || e.Code != "rate_limited" || w.Header().Get("Retry-After") != "2" {
		t.Fatalf("rate limited: %d %s %q", w.Code, e.Code, w.Header().Get("Retry-After"))
	}

	m = &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) { return result("success"), nil }}
	s := newSearchServer(t, m)
	for body, status := range map[string]int{
		`{"query":"x","filters":{"site":"a"}}`:    400,
		`{"query":"x","pagination":{"page":"1"}}`: 400,
		`{"query":"x"} {"query":"y"}`:             400,
	} {
		if w := searchCall(t, s, body); w.Code != status {
			t.Errorf("%s: %d", body, w.Code)
		}
	}
	if w := searchCall(t, s, `{"query":"x"}`, "Content-Type", "text/plain"); w.Code != 415 {
		t.Errorf("text body: %d", w.Code)
	}
	if w := searchCall(t, s, `{"query":"x"}`, "Authorization", ""); w.Code != 401 {
		t.Errorf("no token: %d", w.Code)
	}
	if len(m.SearchCalls()) != 0 {
		t.Fatal("refused requests reached the core")
	}
}

// The body's strings and optional numbers are parsed here; the core gets
// typed values and checks the rest.
func TestSearchRequest_ParseIsTheEdgesWork(t *testing.T) {
	parse := func(body string) (ehr.SearchRequest, error) {
		var req searchRequest
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatal(err)
		}
		return req.parse()
	}
	if sr, err := parse(`{"query":"Ana"}`); err != nil || sr.Page != (ehr.PageRequest{}) || !sr.UpdatedFrom.IsZero() || !sr.UpdatedTo.IsZero() {
		t.Fatalf("absent values: %+v %v", sr, err)
	}
	for body, mention := range map[string]string{
		`{"query":"a","pagination":{"page":0}}`:              "pagination.page must be between 1 and 10000",
		`{"query":"a","pagination":{"page":-3}}`:             "pagination.page must be between 1 and 10000",
		`{"query":"a","pagination":{"limit":0}}`:             "pagination.limit must be between 1 and 100",
		`{"query":"a","filters":{"dateRange":"2024-01-01"}}`: "filters.dateRange must be YYYY-MM-DD/YYYY-MM-DD",
		`{"query":"a","filters":{"dateRange":"x/y"}}`:        "filters.dateRange must be YYYY-MM-DD/YYYY-MM-DD",
	} {
		if _, err := parse(body); !errors.Is(err, ehr.ErrInvalidSearch) || !strings.Contains(err.Error(), mention) {
			t.Errorf("%s: %v, want invalid_search: %s", body, err, mention)
		}
	}
}
