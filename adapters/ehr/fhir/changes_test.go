package fhir_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
)

// appointmentResource is a as an EHR's own screens store it: a booked
// Appointment with the practitioner and a contained patient.
func appointmentResource(a ehr.Appointment) map[string]any {
	return map[string]any{
		"resourceType": "Appointment",
		"status":       "booked",
		"description":  a.Reason,
		"start":        a.Start.Format(time.RFC3339),
		"end":          a.End.Format(time.RFC3339),
		"contained": []any{map[string]any{"resourceType": "Patient", "id": "p",
			"name":      []any{map[string]any{"family": a.Patient.LastName, "given": []any{a.Patient.FirstName}}},
			"birthDate": a.Patient.DateOfBirth,
			"telecom":   []any{map[string]any{"system": "email", "value": a.Patient.Email}}}},
		"participant": []any{
			map[string]any{"actor": map[string]any{"reference": "Practitioner/" + a.AgentID}, "status": "accepted"},
			map[string]any{"actor": map[string]any{"reference": "#p"}, "status": "accepted"},
		},
	}
}

// feedBackend is the change feed contract's backend on f.
func feedBackend(t *testing.T, f *fakeFHIR) ehrtest.ChangeFeedBackend {
	s := newScheduler(t, f, 0)
	return ehrtest.ChangeFeedBackend{
		Feed: s, Scheduler: s,
		AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return f.addAgent(a, free) },
		Book:     func(t *testing.T, a ehr.Appointment) string { return f.add(appointmentResource(a)) },
		Cancel: func(t *testing.T, id string) {
			f.modify("Appointment", id, func(r map[string]any) { r["status"] = "cancelled" })
		},
		Move: func(t *testing.T, id string, start, end time.Time) {
			f.modify("Appointment", id, func(r map[string]any) {
				r["start"], r["end"] = start.Format(time.RFC3339), end.Format(time.RFC3339)
			})
		},
		SetStatus: func(t *testing.T, id string, st ehr.AppointmentStatus) {
			code := map[ehr.AppointmentStatus]string{ehr.StatusCheckedIn: "arrived", ehr.StatusFulfilled: "fulfilled",
				ehr.StatusNoShow: "noshow", ehr.StatusPending: "pending", ehr.StatusBooked: "booked", ehr.StatusCancelled: "cancelled"}[st]
			f.modify("Appointment", id, func(r map[string]any) { r["status"] = code })
		},
	}
}

func TestScheduler_ChangeFeedContract(t *testing.T) {
	ehrtest.TestChangeFeed(t, func(t *testing.T) ehrtest.ChangeFeedBackend { return feedBackend(t, newFakeFHIR(t)) })
}

// A server that applies neither _sort nor _lastUpdated, and pages by
// three: the adapter reads every page and sorts and filters itself.
func TestScheduler_ChangeFeedContractOnAServerThatIgnoresSortAndLastUpdated(t *testing.T) {
	ehrtest.TestChangeFeed(t, func(t *testing.T) ehrtest.ChangeFeedBackend {
		f := newFakeFHIR(t)
		f.pageSize, f.ignored["_sort"], f.ignored["_lastUpdated"] = 3, true, true
		return feedBackend(t, f)
	})
}

// A server that pages by one: each batch is a new search from the last
// instant read.
func TestScheduler_ChangeFeedContractOnAServerOfOneAPage(t *testing.T) {
	ehrtest.TestChangeFeed(t, func(t *testing.T) ehrtest.ChangeFeedBackend {
		f := newFakeFHIR(t)
		f.pageSize = 1
		return feedBackend(t, f)
	})
}

func changeSearches(f *fakeFHIR) []url.Values {
	var out []url.Values
	for _, r := range f.gotRequests() {
		if r.Method == http.MethodGet && r.URL.Path == "/Appointment" {
			out = append(out, r.URL.Query())
		}
	}
	return out
}

func TestAppointmentChanges_AsksForTheChangesAfterSinceSortedAndBounded(t *testing.T) {
	f := newFakeFHIR(t)
	s := newScheduler(t, f, 0)
	since := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.FixedZone("", 2*3600))
	if _, err := s.AppointmentChanges(t.Context(), time.Time{}, 500); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppointmentChanges(t.Context(), since, 5); err != nil {
		t.Fatal(err)
	}
	qs := changeSearches(f)
	if len(qs) != 2 {
		t.Fatalf("searches %v; want 2", qs)
	}
	if qs[0].Has("_lastUpdated") || qs[0].Get("_sort") != "_lastUpdated" || qs[0].Get("_count") != "100" {
		t.Errorf("search from the first = %v; want _sort=_lastUpdated, _count=100 and no _lastUpdated", qs[0])
	}
	if got := qs[1].Get("_lastUpdated"); got != "gt2030-05-06T05:08:09.123Z" || qs[1].Get("_count") != "6" {
		t.Errorf("search from since = %v; want _lastUpdated=gt2030-05-06T05:08:09.123Z (UTC, to the millisecond) and _count=6", qs[1])
	}
}

// Appointments without a lastUpdated, a known status, usable times or a
// practitioner are left out and logged by id only; the feed moves past
// them.
func TestAppointmentChanges_SkipsUnusableAppointmentsAndLogsNoPatientData(t *testing.T) {
	f := newFakeFHIR(t)
	var logs bytes.Buffer
	s := newScheduler(t, f, 0, fhir.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	good := ehr.Appointment{AgentID: "prac-1", Start: at(9, 0), End: at(9, 30),
		Patient: ehr.PatientContact{FirstName: "Zebulon", LastName: "Quixotic", Email: "zq.private@example.org"}}
	bad := map[string]func(r map[string]any){
		"no status":       func(r map[string]any) { delete(r, "status") },
		"unknown status":  func(r map[string]any) { r["status"] = "teleported" },
		"no start":        func(r map[string]any) { delete(r, "start") },
		"end before":      func(r map[string]any) { r["end"] = at(8, 0).Format(time.RFC3339) },
		"no practitioner": func(r map[string]any) { r["participant"] = r["participant"].([]any)[1:] },
	}
	first := f.add(appointmentResource(good))
	var badIDs []string
	for _, change := range bad {
		r := appointmentResource(good)
		change(r)
		badIDs = append(badIDs, f.add(r))
	}
	noTime := f.add(appointmentResource(good))
	f.mu.Lock()
	delete(f.find("Appointment", noTime), "meta")
	f.mu.Unlock()
	last := f.add(appointmentResource(good))

	b, err := s.AppointmentChanges(t.Context(), time.Time{}, 100)
	if err != nil || b.More {
		t.Fatalf("AppointmentChanges: more %v, %v", b.More, err)
	}
	cs := b.Changes
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.Appointment.ID)
	}
	if !slices.Equal(ids, []string{first, last}) {
		t.Errorf("changes %v; want only the usable %s and %s", ids, first, last)
	}
	for _, id := range append(badIDs, noTime) {
		if !strings.Contains(logs.String(), `"appointment":"`+id+`"`) {
			t.Errorf("no log line names the skipped %s:\n%s", id, logs.String())
		}
	}
	for _, secret := range []string{"Zebulon", "Quixotic", "zq.private"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log holds patient data %q:\n%s", secret, logs.String())
		}
	}
	// From the last change: nothing, though the skipped ones are still there.
	if b, err := s.AppointmentChanges(t.Context(), cs[len(cs)-1].Appointment.UpdatedAt, 100); err != nil || b.More || len(b.Changes) != 0 {
		t.Errorf("from the last change: %d changes, more %v, %v; want none", len(b.Changes), b.More, err)
	}
}

// Version is meta.versionId, else the lastUpdated instant; Ref is our
// identifier's booking reference.
func TestAppointmentChanges_VersionAndRef(t *testing.T) {
	f := newFakeFHIR(t)
	s := newScheduler(t, f, 0)
	a := appointmentResource(ehr.Appointment{AgentID: "prac-1", Start: at(9, 0), End: at(9, 30)})
	a["identifier"] = []any{map[string]any{"system": fhir.IdentifierSystem, "value": "urn:uuid:booking-ref-1"},
		map[string]any{"system": "urn:other", "value": "urn:uuid:not-ours"}}
	withVersion := f.add(a)
	noVersion := f.add(appointmentResource(ehr.Appointment{AgentID: "prac-1", Start: at(10, 0), End: at(10, 30)}))
	f.mu.Lock()
	f.find("Appointment", noVersion)["meta"] = map[string]any{"lastUpdated": "2031-02-03T04:05:06.789+01:00"}
	f.mu.Unlock()
	b, err := s.AppointmentChanges(t.Context(), time.Time{}, 10)
	cs := b.Changes
	if err != nil || len(cs) != 2 {
		t.Fatalf("AppointmentChanges: %d changes, %v", len(cs), err)
	}
	if c := cs[0]; c.Appointment.ID != withVersion || c.Version != "1" || c.Appointment.Ref != "booking-ref-1" {
		t.Errorf("first change %s version %q ref %q; want %s, 1, booking-ref-1", c.Appointment.ID, c.Version, c.Appointment.Ref, withVersion)
	}
	if c := cs[1]; c.Appointment.ID != noVersion || c.Version != "2031-02-03T03:05:06.789Z" || c.Appointment.Ref != "" {
		t.Errorf("second change %s version %q ref %q; want %s, 2031-02-03T03:05:06.789Z, none", c.Appointment.ID, c.Version, c.Appointment.Ref, noVersion)
	}
}

// Changes of one instant are never split between two batches, whatever
// the page size and max: more of them than a page are read past with the
// next links.
func TestAppointmentChanges_ChangesOfOneInstantAreNeverSplit(t *testing.T) {
	for _, pageSize := range []int{1, 2, 3, 10} {
		t.Run("page of "+strconv.Itoa(pageSize), func(t *testing.T) {
			f := newFakeFHIR(t)
			f.pageSize = pageSize
			s := newScheduler(t, f, 0)
			var want []string
			for i := range 7 {
				want = append(want, f.add(appointmentResource(ehr.Appointment{AgentID: "prac-1", Start: at(9+i, 0), End: at(9+i, 30)})))
			}
			f.mu.Lock()
			for i, id := range want { // 0 | 1 2 3 4 | 5 6 by instant
				stamp := map[bool]string{true: "2031-01-01T00:00:01.000Z", false: "2031-01-01T00:00:02.000Z"}[i < 5]
				if i == 0 {
					stamp = "2031-01-01T00:00:00.000Z"
				}
				f.find("Appointment", id)["meta"] = map[string]any{"versionId": "1", "lastUpdated": stamp}
			}
			f.mu.Unlock()
			var got []string
			var since time.Time
			for calls := 0; ; calls++ {
				b, err := s.AppointmentChanges(t.Context(), since, 2)
				if err != nil || calls > 20 {
					t.Fatalf("call %d: %v", calls, err)
				}
				cs, more := b.Changes, b.More
				for _, c := range cs {
					got = append(got, c.Appointment.ID)
				}
				if len(cs) > 0 {
					since = cs[len(cs)-1].Appointment.UpdatedAt
				}
				if !more {
					break
				}
			}
			if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
				t.Errorf("read %v; want each of %v once", got, want)
			}
		})
	}
}

// An appointment changed while the feed reads its pages moves behind
// them; none of the others is hidden by the shift.
func TestAppointmentChanges_AChangeWhileReadingHidesNoOther(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 3
	s := newScheduler(t, f, 0)
	var ids []string
	for i := range 6 {
		ids = append(ids, f.add(appointmentResource(ehr.Appointment{AgentID: "prac-1", Start: at(9+i, 0), End: at(9+i, 30)})))
	}
	searches := 0
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodGet && r.URL.Path == "/Appointment" {
			if searches++; searches == 2 {
				f.modify("Appointment", ids[0], func(res map[string]any) { res["status"] = "arrived" })
			}
		}
		return false
	}
	b, err := s.AppointmentChanges(t.Context(), time.Time{}, 100)
	if err != nil || b.More {
		t.Fatalf("AppointmentChanges: more %v, %v", b.More, err)
	}
	cs := b.Changes
	seen := map[string]bool{}
	for _, c := range cs {
		seen[c.Appointment.ID] = true
	}
	for _, id := range ids {
		if !seen[id] {
			t.Errorf("%s was not read (changes %d)", id, len(cs))
		}
	}
	if l := cs[len(cs)-1]; l.Appointment.ID != ids[0] || l.Appointment.Status != ehr.StatusCheckedIn || l.Version != "2" {
		t.Errorf("last change %s %s version %s; want %s checked_in version 2", l.Appointment.ID, l.Appointment.Status, l.Version, ids[0])
	}
}

// The batch tells the server's clock: the HTTP Date of its answers, the
// latest when a batch takes several; zero when the server sends none.
func TestAppointmentChanges_TellsTheServersClock(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 1
	s := newScheduler(t, f, 0)
	for i := range 3 {
		f.add(appointmentResource(ehr.Appointment{AgentID: "prac-1", Start: at(9+i, 0), End: at(9+i, 30)}))
	}
	dates := []string{"Wed, 01 Jan 2031 00:00:05 GMT", "Wed, 01 Jan 2031 00:00:07 GMT", "Wed, 01 Jan 2031 00:00:06 GMT"}
	searches := 0
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodGet && r.URL.Path == "/Appointment" {
			w.Header().Set("Date", dates[min(searches, len(dates)-1)])
			searches++
		}
		return false
	}
	b, err := s.AppointmentChanges(t.Context(), time.Time{}, 100)
	if err != nil || len(b.Changes) != 3 || searches < 3 {
		t.Fatalf("AppointmentChanges: %d changes in %d searches, %v", len(b.Changes), searches, err)
	}
	if want := time.Date(2031, 1, 1, 0, 0, 7, 0, time.UTC); !b.Clock.Equal(want) {
		t.Errorf("clock %s, want the latest Date, %s", b.Clock, want)
	}

	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		w.Header()["Date"] = nil // the server sends no Date
		return false
	}
	if b, err := s.AppointmentChanges(t.Context(), time.Time{}, 100); err != nil || !b.Clock.IsZero() {
		t.Errorf("without a Date: clock %s, %v; want zero", b.Clock, err)
	}
}
