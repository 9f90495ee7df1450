package fhir_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// newRecordClient returns a Client on f through a testDoer.
func newRecordClient(t *testing.T, f *fakeFHIR) *fhir.Client {
	t.Helper()
	base, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	return fhir.New(&testDoer{name: "clinic-a", base: base, client: f.Client()}, "")
}

func addRecord(f *fakeFHIR, typ, patient, date string) string {
	res := map[string]any{
		"resourceType": typ,
		"subject":      map[string]any{"reference": "Patient/" + patient},
		"code":         map[string]any{"text": "Synthetic"},
	}
	switch typ {
	case "MedicationRequest":
		res["authoredOn"] = date
	case "Condition":
		res["onsetDateTime"] = date
	}
	return f.add(res)
}

func recordIDs(t *testing.T, recs []ehr.Record, typ ehr.ClinicalType) []string {
	t.Helper()
	var ids []string
	for _, r := range recs {
		if r.Type != typ || r.PatientID != "p1" {
			t.Errorf("record %+v", r)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

var spring2024 = ehr.RecordQuery{PatientID: "p1",
	From: ehr.Date{Year: 2024, Month: time.March, Day: 1}, To: ehr.Date{Year: 2024, Month: time.June, Day: 30}}

func TestSearchRecords_FollowsPagesWithDatesOneDayWider(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 2
	var want []string
	for _, d := range []string{"2024-02-29", "2024-03-01", "2024-04-10", "2024-05-20", "2024-06-30", "2024-07-01"} {
		want = append(want, addRecord(f, "MedicationRequest", "p1", d))
	}
	addRecord(f, "MedicationRequest", "p1", "2024-02-28") // before the wider range
	addRecord(f, "MedicationRequest", "p1", "2024-07-02") // after it
	addRecord(f, "MedicationRequest", "p2", "2024-04-10") // another person's

	q := spring2024
	q.Type = ehr.TypeMedicationRequest
	recs, err := newRecordClient(t, f).SearchRecords(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if ids := recordIDs(t, recs, ehr.TypeMedicationRequest); !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	reqs := f.gotRequests()
	if len(reqs) != 3 {
		t.Fatalf("requests %v, want 3 pages", f.got())
	}
	first := reqs[0].URL
	if first.Path != "/MedicationRequest" {
		t.Errorf("path %s", first.Path)
	}
	v := first.Query()
	if v.Get("patient") != "p1" || v.Get("_count") != "100" {
		t.Errorf("first request %s", first.RequestURI())
	}
	if got, want := v["authoredon"], []string{"ge2024-02-29", "le2024-07-01"}; !slices.Equal(got, want) {
		t.Errorf("authoredon %v, want %v", got, want)
	}
}

// Condition's onset-date misses a Condition dated by recordedDate: no date
// parameter is sent (the fake answers 400 to any it does not know).
func TestSearchRecords_NoDateParameterWhereItDoesNotCover(t *testing.T) {
	f := newFakeFHIR(t)
	want := []string{addRecord(f, "Condition", "p1", "2019-01-01"), addRecord(f, "Condition", "p1", "2024-04-01")}
	q := spring2024
	q.Type = ehr.TypeCondition
	recs, err := newRecordClient(t, f).SearchRecords(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if ids := recordIDs(t, recs, ehr.TypeCondition); !slices.Equal(ids, want) {
		t.Errorf("ids %v, want %v", ids, want)
	}
	if got := f.got(); len(got) != 1 || got[0] != "GET /Condition?_count=100&patient=p1" {
		t.Errorf("requests %v", got)
	}
}

func TestSearchRecords_NoDateParameterWithoutRange(t *testing.T) {
	f := newFakeFHIR(t)
	addRecord(f, "MedicationRequest", "p1", "2010-01-01")
	recs, err := newRecordClient(t, f).SearchRecords(context.Background(),
		ehr.RecordQuery{Type: ehr.TypeMedicationRequest, PatientID: "p1"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("records %v, %v", recs, err)
	}
	if got := f.got(); len(got) != 1 || got[0] != "GET /MedicationRequest?_count=100&patient=p1" {
		t.Errorf("requests %v", got)
	}
}

func TestSearchRecords_Errors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		wantKind core.Kind
		wantCode string
	}{
		{"404", 404, `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"not-supported"}]}`,
			core.KindBadGateway, "record_type_not_supported"},
		{"400", 400, `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"not-supported"}]}`,
			core.KindBadGateway, "record_type_not_supported"},
		{"500", 500, `{}`, core.KindBadGateway, "ehr_error"},
		{"malformed entry", 200, bundleOf("", `{"resourceType":"MedicationRequest","id":"m1","authoredOn":12}`),
			core.KindBadGateway, "ehr_bad_response"},
		{"entry without id", 200, bundleOf("", `{"resourceType":"MedicationRequest","authoredOn":"2024-01-01"}`),
			core.KindBadGateway, "ehr_bad_response"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeFHIR(t)
			f.intercept = func(w http.ResponseWriter, _ *http.Request, _ []byte) bool {
				writeFHIR(w, tc.status, tc.body)
				return true
			}
			_, err := newRecordClient(t, f).SearchRecords(context.Background(),
				ehr.RecordQuery{Type: ehr.TypeMedicationRequest, PatientID: "p1"})
			if e := coreError(t, err); e.Kind != tc.wantKind || e.Code != tc.wantCode {
				t.Errorf("error %v (%v, %s), want %v %s", err, e.Kind, e.Code, tc.wantKind, tc.wantCode)
			}
		})
	}
}

// A server that cannot search the type (400 or 404 to it) fails with
// record_type_not_supported; the other types still answer.
func TestSearchRecords_TypeTheServerCannotSearch(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusBadRequest} {
		f := newFakeFHIR(t)
		f.refuse["Procedure"] = status
		c := newRecordClient(t, f)
		_, err := c.SearchRecords(context.Background(), ehr.RecordQuery{Type: ehr.TypeProcedure, PatientID: "p1"})
		if e := coreError(t, err); e.Kind != core.KindBadGateway || e.Code != "record_type_not_supported" {
			t.Errorf("%d: error %v (%v %s), want KindBadGateway record_type_not_supported", status, err, e.Kind, e.Code)
		}
		if recs, err := c.SearchRecords(context.Background(), ehr.RecordQuery{Type: ehr.TypeCondition, PatientID: "p1"}); err != nil || recs == nil {
			t.Errorf("%d: conditions = %v, %v; want an empty answer", status, recs, err)
		}
	}
}

// A 404 on a later page is a broken next link, not an unsupported type.
func TestSearchRecords_LaterPageNotFound(t *testing.T) {
	f := newFakeFHIR(t)
	f.intercept = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		if r.URL.Query().Get("page") == "" {
			writeFHIR(w, 200, bundleOf(f.URL+"/MedicationRequest?page=2",
				`{"resourceType":"MedicationRequest","id":"m1","authoredOn":"2024-01-01"}`))
		} else {
			writeFHIR(w, 404, `{}`)
		}
		return true
	}
	_, err := newRecordClient(t, f).SearchRecords(context.Background(),
		ehr.RecordQuery{Type: ehr.TypeMedicationRequest, PatientID: "p1"})
	if e := coreError(t, err); e.Code != "ehr_error" {
		t.Errorf("error %v (%s)", err, e.Code)
	}
}

// The resources of a page are converted while the next page is asked
// for: a resource that does not convert still fails the search with
// ehr_bad_response naming it, over a later page's own failure (here a
// 500), and it ends the walk of pages that would otherwise go on.
func TestSearchRecords_UnconvertibleResourceEndsTheWalk(t *testing.T) {
	good := `{"resourceType":"MedicationRequest","id":"m%d","authoredOn":"2024-01-01"}`
	bad := `{"resourceType":"MedicationRequest","id":"bad","authoredOn":12}`
	for _, later := range []string{"fails", "goes on"} {
		t.Run(later, func(t *testing.T) {
			f := newFakeFHIR(t)
			var pages atomic.Int64
			f.intercept = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
				n, _ := strconv.Atoi(r.URL.Query().Get("page"))
				pages.Add(1)
				switch {
				case n == 0:
					writeFHIR(w, 200, bundleOf(f.URL+"/MedicationRequest?page=1", fmt.Sprintf(good, 0), bad))
				case later == "fails":
					writeFHIR(w, 500, `{}`)
				default: // a new page each time, without end
					writeFHIR(w, 200, bundleOf(fmt.Sprintf("%s/MedicationRequest?page=%d", f.URL, n+1), fmt.Sprintf(good, n)))
				}
				return true
			}
			recs, err := newRecordClient(t, f).SearchRecords(context.Background(),
				ehr.RecordQuery{Type: ehr.TypeMedicationRequest, PatientID: "p1"})
			e := coreError(t, err)
			if recs != nil || e.Code != "ehr_bad_response" || !strings.Contains(e.Message, "entry 1") {
				t.Fatalf("SearchRecords = %d records, %v (%s); want ehr_bad_response naming entry 1", len(recs), err, e.Code)
			}
			if n := pages.Load(); n > 3 {
				t.Errorf("%d pages read after a resource that does not convert on the first; want at most the next two", n)
			}
		})
	}
}

// The record search contract on the fake server, whose pages (10) are far
// smaller than the searcher's _count.
func TestSearchRecords_Contract(t *testing.T) {
	ehrtest.TestRecordSearcher(t, func(t *testing.T) ehrtest.RecordBackend {
		f := newFakeFHIR(t)
		return ehrtest.RecordBackend{
			Searcher:   newRecordClient(t, f),
			AddPatient: func(*testing.T) string { return ehrtest.NewID() },
			AddRecords: func(_ *testing.T, seeds []ehrtest.SeedRecord) []string {
				ids := make([]string, len(seeds))
				for i, sd := range seeds {
					ids[i] = f.add(fhirtest.RecordResource(sd))
				}
				return ids
			},
		}
	})
}

// A resource of the type that does not decode — on a later page, the
// pages before it good — fails the search with ehr_bad_response (never a
// cut answer), for each type; the message names the entry, not the person.
func TestSearchRecords_UnconvertibleResourceOfEachTypeIsABadResponse(t *testing.T) {
	broken := map[ehr.ClinicalType]map[string]any{
		ehr.TypeEncounter:          {"period": "2024-03-12"},
		ehr.TypeCondition:          {"clinicalStatus": "active"},
		ehr.TypeObservation:        {"code": []any{"2339-0"}},
		ehr.TypeMedicationRequest:  {"authoredOn": 20240312},
		ehr.TypeAllergyIntolerance: {"recordedDate": 20240312},
		ehr.TypeImmunization:       {"vaccineCode": "flu"},
		ehr.TypeProcedure:          {"performedPeriod": []any{}},
		ehr.TypeDocumentReference:  {"content": map[string]any{"attachment": map[string]any{}}},
		ehr.TypeDiagnosticReport:   {"issued": true},
	}
	const person = "person-7f3b9c2e41d8a6"
	for _, typ := range ehr.ClinicalTypes {
		t.Run(string(typ), func(t *testing.T) {
			f := newFakeFHIR(t)
			seed := ehrtest.SeedRecord{Record: ehr.Record{Type: typ, PatientID: person, Date: "2024-03-12T09:00:00Z", Status: "final"}}
			for range 12 {
				f.add(fhirtest.RecordResource(seed))
			}
			bad := fhirtest.RecordResource(seed)
			for k, v := range broken[typ] {
				bad[k] = v
			}
			f.add(bad)
			recs, err := newRecordClient(t, f).SearchRecords(context.Background(), ehr.RecordQuery{Type: typ, PatientID: person})
			e := coreError(t, err)
			if recs != nil || e.Kind != core.KindBadGateway || e.Code != "ehr_bad_response" {
				t.Errorf("SearchRecords = %d records, %v (%v %s); want ehr_bad_response", len(recs), err, e.Kind, e.Code)
			}
			if !strings.Contains(e.Message, "entry 2") || strings.Contains(e.Message, person) {
				t.Errorf("message %q: want it to name entry 2 of the page, and not the person", e.Message)
			}
		})
	}
}

// Past the bound — by Bundle.total, by the matches read when the server
// tells no total, or by the pages — a search fails with
// ehr_listing_inexact; it never answers a cut list.
func TestSearchRecords_PastTheBoundIsInexactNeverCut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		total   string // Bundle.total, or "" for none
		perPage int
	}{
		{"total", `,"total":10001`, 100},
		{"matches without a total", "", 100},
		{"pages without a total", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeFHIR(t)
			f.intercept = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
				page, _ := strconv.Atoi(r.URL.Query().Get("page"))
				var entries []string
				for i := range tc.perPage {
					entries = append(entries, fmt.Sprintf(`{"fullUrl":"urn:x","resource":{"resourceType":"Observation","id":"o-%d-%d","status":"final"},"search":{"mode":"match"}}`, page, i))
				}
				writeFHIR(w, 200, fmt.Sprintf(`{"resourceType":"Bundle","type":"searchset"%s,"link":[{"relation":"next","url":"%s/Observation?page=%d"}],"entry":[%s]}`,
					tc.total, f.URL, page+1, strings.Join(entries, ",")))
				return true
			}
			recs, err := newRecordClient(t, f).SearchRecords(context.Background(),
				ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"})
			if e := coreError(t, err); recs != nil || e.Kind != core.KindBadGateway || e.Code != fhir.CodeListingInexact {
				t.Errorf("SearchRecords = %d records, %v (%v %s); want ehr_listing_inexact", len(recs), err, e.Kind, e.Code)
			}
		})
	}
}
