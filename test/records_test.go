package test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
)

// recordAnswer is a search answer whose results are record items.
type recordAnswer struct {
	Status string `json:"status"`
	Data   struct {
		Results []struct {
			ID         string `json:"id"`
			RecordType string `json:"recordType"`
			Source     string `json:"source"`
			Sources    []struct {
				Source, RecordID, PatientID string
			} `json:"sources"`
			PersonID string `json:"personId"`
			Date     string `json:"date"`
			Code     struct {
				System, Code, Display string
			} `json:"code"`
			Text  string          `json:"text"`
			Value json.RawMessage `json:"value"`
		} `json:"results"`
		TotalCount int `json:"totalCount"`
	} `json:"data"`
	Metadata struct {
		Sources  []string `json:"sources"`
		CacheHit bool     `json:"cacheHit"`
		Errors   []struct {
			Source, Code, Message string
		} `json:"errors"`
	} `json:"metadata"`
}

func (s *server) searchRecords(token, body string) (response, recordAnswer) {
	s.t.Helper()
	return searchAs[recordAnswer](s, token, body)
}

// The labs of 2024 from both EHRs (the fake EHRs find every person they
// hold for any query: Ana in both, Al in one): the glucose both hold for
// Ana (same LOINC code, same day) is one item with both sources, tied to
// the person a search of people returns; the range keeps 2024 only, by
// the day as written; a token without user/Observation.rs is refused.
func TestSearch_RecordsMergedAcrossEHRs(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	a.holdRecords(
		fhirObservation("ga", "a-1", "2024-03-01T08:30:00-06:00", "2345-7", "Glucose", "5.40", "mmol/L"),
		fhirObservation("ha", "a-1", "2023-12-31T23:30:00-06:00", "4548-4", "Hemoglobin A1c", "6.1", "%"),
		fhirObservation("za", "a-2", "2024-02-02", "2345-7", "Glucose", "4.9", "mmol/L"), // Al's
	)
	b.holdRecords(
		fhirObservation("gb", "b-9", "2024-03-01", "2345-7", "Glucose", "5.4", "mmol/L"),
		fhirObservation("hb", "b-9", "2024-11-20", "4548-4", "Hemoglobin A1c", "5.9", "%"),
	)
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR, c.SearchCacheTTL = cfg, time.Minute })
	tok := w.scopedToken("alice", "user/Patient.rs user/Observation.rs")

	body := `{"query":"identifier:MRN-1","filters":{"recordType":"observation","dateRange":"2024-01-01/2024-12-31"}}`
	r, ans := s.searchRecords(tok, body)
	if r.status != 200 || ans.Status != "success" || ans.Data.TotalCount != 3 || len(ans.Data.Results) != 3 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	latest, glucose, al := ans.Data.Results[0], ans.Data.Results[1], ans.Data.Results[2]
	if latest.Date != "2024-11-20" || latest.Source != "clinicb" || len(latest.Sources) != 1 || latest.RecordType != "observation" {
		t.Fatalf("newest first: %s", r.body)
	}
	if glucose.Date != "2024-03-01T08:30:00-06:00" || len(glucose.Sources) != 2 || glucose.Sources[0].RecordID != "ga" ||
		glucose.Sources[1].RecordID != "gb" || glucose.Code.Code != "2345-7" || glucose.Text != "Glucose" ||
		string(glucose.Value) != `{"value":5.40,"unit":"mmol/L"}` {
		t.Fatalf("merged glucose: %s", r.body)
	}
	if al.Sources[0].RecordID != "za" || al.Date != "2024-02-02" {
		t.Fatalf("Al's glucose: %s", r.body)
	}
	_, people := s.search(tok, `{"query":"identifier:MRN-1"}`)
	ids := map[string]string{} // family → person id
	for _, p := range people.Data.Results {
		ids[p.Name.Family] = p.ID
	}
	if glucose.PersonID == "" || glucose.PersonID != ids["Lopez"] || latest.PersonID != glucose.PersonID || al.PersonID != ids["Baker"] {
		t.Fatalf("personIds %q %q %q, people %v", latest.PersonID, glucose.PersonID, al.PersonID, ids)
	}

	before := a.calls.Load() + b.calls.Load()
	if _, again := s.searchRecords(tok, body); !again.Metadata.CacheHit || a.calls.Load()+b.calls.Load() != before {
		t.Fatal("a repeated record search asked the EHRs again")
	}
	if _, all := s.searchRecords(tok, `{"query":"identifier:MRN-1","filters":{"recordType":"observation"}}`); all.Data.TotalCount != 4 {
		t.Fatalf("without a range: %d records", all.Data.TotalCount)
	}
	if r, _ := s.searchRecords(w.token("bob"), body); r.status != 403 || !strings.Contains(string(r.body), "user/Observation.rs") {
		t.Fatalf("without user/Observation.rs: %d %s", r.status, r.body)
	}
	if r, _ := s.searchRecords(tok, `{"query":"identifier:MRN-1","filters":{"recordType":"condition"}}`); r.status != 403 ||
		!strings.Contains(string(r.body), "user/Condition.rs") {
		t.Fatalf("condition: %d %s", r.status, r.body)
	}
	kinds := map[string]int{} // resource type, outcome and record type of each record search's event
	for _, row := range auditRows(t, w.db) {
		if row.action == "patient.search" && row.resourceType != "patient" {
			var d struct{ RecordType string }
			if err := json.Unmarshal([]byte(row.detail), &d); err != nil {
				t.Fatal(err)
			}
			kinds[row.resourceType+" "+row.outcome+" "+d.RecordType]++
		}
	}
	if kinds["Observation success observation"] != 3 || kinds["Observation denied observation"] != 1 || kinds["Condition denied condition"] != 1 {
		t.Fatalf("audit events of the record searches: %v", kinds)
	}
}

// Eleven people in one EHR refuse a record search before any record is
// read; an EHR that cannot search the type leaves the other's answer
// partial.
func TestSearch_RecordsBadPaths(t *testing.T) {
	w := newWorld(t)
	var many []map[string]any
	for i := range 11 {
		many = append(many, fhirPatient(fmt.Sprint("p-", i), "Smith", "Jo", fmt.Sprintf("1970-01-%02d", i+1), fmt.Sprint("MRN-S", i)))
	}
	a := newFakeEHR(t, "clinica", many...)
	b := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Smith", "Jo", "1970-01-01", "MRN-S0"))
	b.holdRecords(fhirObservation("o1", "b-1", "2024-01-01", "2345-7", "Glucose", "5", "mmol/L"))
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	tok := w.scopedToken("alice", "user/*.rs")

	r, _ := s.searchRecords(tok, `{"query":"family:Smith","filters":{"recordType":"observation"}}`)
	if r.status != 400 || r.errorCode(t) != "query_too_broad" {
		t.Fatalf("eleven people: %d %s", r.status, r.body)
	}
	for _, f := range []*fakeEHR{a, b} {
		if n := f.calls.Load(); n != 1 {
			t.Fatalf("%s asked %d times, want the patient search only", f.name, n)
		}
	}
	for body, code := range map[string]string{
		`{"query":"Jo","filters":{"recordType":"labs"}}`:                                            "record_type_not_supported",
		`{"query":"Jo","filters":{"recordType":"observation","dateRange":"2024-02-01/2024-01-01"}}`: "invalid_search",
		`{"query":"Jo","filters":{"recordType":"observation","dateRange":"2024-02-31/2024-03-01"}}`: "invalid_search",
	} {
		if r, _ := s.searchRecords(tok, body); r.status != 400 || r.errorCode(t) != code {
			t.Errorf("%s: %d %s", body, r.status, r.body)
		}
	}

	c := newFakeEHR(t, "clinicc", fhirPatient("c-1", "Smith", "Jo", "1970-01-01", "MRN-S0"))
	c.noRecords.Store(true)
	cfg, _ = ehrFile(t, 2000, c, b)
	s = w.start(func(cf *app.Config) { cf.EHR = cfg })
	r, ans := s.searchRecords(tok, `{"query":"identifier:MRN-S0","filters":{"recordType":"observation"}}`)
	if r.status != 200 || ans.Status != "partial" || len(ans.Data.Results) != 1 || len(ans.Metadata.Errors) != 1 ||
		ans.Metadata.Errors[0].Source != "clinicc" || ans.Metadata.Errors[0].Code != "record_type_not_supported" {
		t.Fatalf("an EHR without observations: %d %s", r.status, r.body)
	}
}
