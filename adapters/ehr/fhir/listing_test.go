package fhir_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// addAgents stores n active agents named Agent001…, with specialty
// Cardiology for the even ones, and returns their ids in creation order.
func addAgents(f *fakeFHIR, n int) []string {
	ids := make([]string, n)
	for i := range n {
		a := testAgent()
		a.FirstName, a.LastName = "Agent", fmt.Sprintf("N%03d", i)
		a.Name = a.FirstName + " " + a.LastName
		if i%2 == 1 {
			a.Specialty = "Dermatology"
		}
		ids[i] = f.addAgent(a, nil)
	}
	return ids
}

func TestListAgents_AsksTheServerForThePageAndTakesItsTotal(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 100
	ids := addAgents(f, 25)
	s := newScheduler(t, f, 0)
	pg, err := s.ListAgents(context.Background(), ehr.AgentFilter{Page: 3, Limit: 4})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range pg.Items {
		got = append(got, a.ID)
		if a.Specialty == "" {
			t.Errorf("agent %s has no specialty: its role was not included", a.ID)
		}
	}
	if !slices.Equal(got, ids[8:12]) || pg.TotalCount != 25 || pg.Page != 3 || pg.Limit != 4 {
		t.Errorf("page = %v (total %d, page %d, limit %d); want %v, 25, 3, 4", got, pg.TotalCount, pg.Page, pg.Limit, ids[8:12])
	}
	if reqs := f.got(); len(reqs) != 1 {
		t.Fatalf("requests = %v; want one search", reqs)
	}
	q := query(t, f.got()[0])
	if q.Get("_count") != "4" || q.Get("_offset") != "8" || q.Get("_total") != "accurate" {
		t.Errorf("query = %v; want _count=4, _offset=8, _total=accurate", q)
	}
}

// The server sends fewer resources a page than asked (3) and pages by its
// next links: every page is still whole, with no loss or repeat.
func TestListAgents_PagesThroughEverythingWithoutLossOrRepeat(t *testing.T) {
	for _, filter := range []ehr.AgentFilter{{}, {Name: "agent"}, {Specialty: "cardiology"}} {
		f := newFakeFHIR(t)
		f.pageSize = 3
		ids := addAgents(f, 23)
		want := ids
		if filter.Specialty != "" {
			want = nil
			for i, id := range ids {
				if i%2 == 0 {
					want = append(want, id)
				}
			}
		}
		s := newScheduler(t, f, 0)
		var got []string
		for page := 1; page <= 6; page++ {
			filter.Page, filter.Limit = page, 5
			pg, err := s.ListAgents(context.Background(), filter)
			if err != nil {
				t.Fatalf("%+v: %v", filter, err)
			}
			if pg.TotalCount != len(want) {
				t.Errorf("%+v: totalCount = %d; want %d", filter, pg.TotalCount, len(want))
			}
			for _, a := range pg.Items {
				got = append(got, a.ID)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%+v: paged %v; want %v", filter, got, want)
		}
	}
}

func TestListAppointments_AsksTheServerForThePageAndTakesItsTotal(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 100
	id := f.addAgent(testAgent(), nil)
	s := newScheduler(t, f, 0)
	var ids []string
	for h := range 7 {
		a, err := s.CreateAppointment(context.Background(), booking(id, at(8+h, 0), 30))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ID)
	}
	before := len(f.got())
	pg, err := s.ListAppointments(context.Background(), ehr.AppointmentFilter{AgentID: id, Page: 2, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range pg.Items {
		got = append(got, a.ID)
	}
	if !slices.Equal(got, ids[3:6]) || pg.TotalCount != 7 {
		t.Errorf("page = %v (total %d); want %v, 7", got, pg.TotalCount, ids[3:6])
	}
	reqs := f.got()[before:]
	if len(reqs) != 1 {
		t.Fatalf("requests = %v; want one search", reqs)
	}
	q := query(t, reqs[0])
	if q.Get("_count") != "3" || q.Get("_offset") != "3" || q.Get("_total") != "accurate" || q.Get("actor") != "Practitioner/"+id {
		t.Errorf("query = %v", q)
	}
	// The e-mail is matched in the adapter: every appointment is read.
	pg, err = s.ListAppointments(context.Background(), ehr.AppointmentFilter{PatientEmail: "JO@example.org", Page: 3, Limit: 3})
	if err != nil || pg.TotalCount != 7 || len(pg.Items) != 1 || pg.Items[0].ID != ids[6] {
		t.Errorf("by e-mail: %+v, %v", pg, err)
	}
}

// withTotal puts "total" into a bundle of bundleOf.
func withTotal(total int, b string) string {
	return strings.Replace(b, `"type":"searchset",`, fmt.Sprintf(`"type":"searchset","total":%d,`, total), 1)
}

func practitionerJSON(id string) string {
	return fmt.Sprintf(`{"resourceType":"Practitioner","id":%q,"name":[{"family":"F%s"}]}`, id, id)
}

// An EHR that pages wrongly is an upstream error with a clear code, never
// a loop, a cut or a wrong total.
func TestListings_PagingFaultsAreUpstreamErrors(t *testing.T) {
	tests := []struct {
		name   string
		filter ehr.AgentFilter
		answer func(f *fakeFHIR, n int, r *http.Request) string // n: 1 for the first request
		code   string
		max    int // requests at most
	}{
		{"a next link to another host", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return bundleOf("https://evil.example/Practitioner?_offset=1", practitionerJSON("p1"))
		}, fhir.CodePagingForeignHost, 1},
		{"a next link to another port", ehr.AgentFilter{Specialty: "x"}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(2, bundleOf("http://127.0.0.1:1/Practitioner?_offset=1", practitionerJSON("p1")))
		}, fhir.CodePagingForeignHost, 1},
		{"a next link back to the same page", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return bundleOf(f.URL+r.URL.RequestURI(), practitionerJSON("p1"))
		}, fhir.CodePagingLoop, 1},
		{"an empty page with a next link", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return bundleOf(fmt.Sprintf("%s/Practitioner?page=%d", f.URL, n+1))
		}, fhir.CodePagingLoop, 1},
		{"pages without end", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return bundleOf(fmt.Sprintf("%s/Practitioner?page=%d", f.URL, n+1), practitionerJSON(fmt.Sprint("p", n)))
		}, fhir.CodeListingInexact, 500},
		{"more matches than can be filtered here", ehr.AgentFilter{Specialty: "x"}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(fhir.MaxScan+1, bundleOf(f.URL+"/Practitioner?page=2", practitionerJSON("p1")))
		}, fhir.CodeListingInexact, 1},
		{"a page that repeats an entry of the page before", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return bundleOf(fmt.Sprintf("%s/Practitioner?page=%d", f.URL, n+1), practitionerJSON("p1"))
		}, fhir.CodePagingRepeat, 2},
		{"a page that repeats an entry of its own", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(2, bundleOf("", practitionerJSON("p1"), practitionerJSON("p1")))
		}, fhir.CodePagingRepeat, 1},
		{"a total above the entries of the last page", ehr.AgentFilter{}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(5, bundleOf("", practitionerJSON("p1")))
		}, fhir.CodeTotalMismatch, 1},
		{"a total below the entries", ehr.AgentFilter{Limit: 5}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(1, bundleOf("", practitionerJSON("p1"), practitionerJSON("p2")))
		}, fhir.CodeTotalMismatch, 1},
		{"a total that changes between pages", ehr.AgentFilter{Limit: 2}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(2+n, bundleOf(fmt.Sprintf("%s/Practitioner?page=%d", f.URL, n+1), practitionerJSON(fmt.Sprint("p", n))))
		}, fhir.CodeTotalMismatch, 2},
		{"a total other than the matches of a full read", ehr.AgentFilter{Specialty: "x"}, func(f *fakeFHIR, n int, r *http.Request) string {
			return withTotal(3, bundleOf("", practitionerJSON("p1"), practitionerJSON("p2")))
		}, fhir.CodeTotalMismatch, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeFHIR(t)
			// Counted atomically: a page read ahead may still be asked for
			// after the listing has failed.
			var requests atomic.Int32
			f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
				if r.URL.Path != "/Practitioner" {
					return false
				}
				n := int(requests.Add(1))
				// A self link with the parameters as sent: all applied.
				writeFHIR(w, 200, strings.Replace(tt.answer(f, n, r), `"url":"x"`, `"url":`+strconv.Quote(f.URL+r.URL.RequestURI()), 1))
				return true
			}
			s := newScheduler(t, f, 0)
			_, err := s.ListAgents(context.Background(), tt.filter)
			e := coreError(t, err)
			if e.Kind != core.KindBadGateway || e.Code != tt.code || !strings.Contains(e.Message, "clinic-a") {
				t.Errorf("err = %v (kind %v, code %s); want bad gateway, %s", err, e.Kind, e.Code, tt.code)
			}
			// Without a total the adapter reads the whole listing: a second
			// pass may follow the first page search, and a pass that reads
			// to the end asks for the page after the one it stops on.
			if n := int(requests.Load()); n > tt.max+2 {
				t.Errorf("%d requests; want at most %d", n, tt.max+2)
			}
		})
	}
}
