package fhirtest_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// addAgent seeds srv with a Practitioner (name, e-mail, time zone
// extension), a PractitionerRole (specialty, locations), a Schedule and a
// free Slot for each period, and returns the Practitioner's id.
// The contract suite against Medplum, one server for every subtest (the
// suite tags what it seeds), pages of pageSize.
func TestIntegrationFHIRScheduler_Contract(t *testing.T) {
	// Started here, on the outer test, so it outlives each subtest (and a
	// missing server skips or fails this test, not a subtest's parent).
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize), fhirtest.WithRequestLog())
	sch := fhir.NewScheduler(newEHRClient(t, srv.URL(), testAPIKey))
	ehrtest.TestScheduler(t, func(*testing.T) ehrtest.Backend {
		return ehrtest.Backend{
			Scheduler: sch,
			AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string {
				return srv.AddAgent(t, a, free)
			},
		}
	})
}

// Each FHIR status Medplum stores reads as the contract's internal status,
// and a status listing finds it through the comma list of codes.
func TestIntegrationFHIRScheduler_ReadsEveryStatusTheServerStored(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize))
	sch := fhir.NewScheduler(newEHRClient(t, srv.URL(), testAPIKey))
	start := time.Date(time.Now().Year()+1, 3, 2, 9, 0, 0, 0, time.UTC)
	codes := map[string]ehr.AppointmentStatus{
		"proposed": ehr.StatusPending, "pending": ehr.StatusPending, "waitlist": ehr.StatusPending,
		"booked": ehr.StatusBooked, "arrived": ehr.StatusCheckedIn, "checked-in": ehr.StatusCheckedIn,
		"fulfilled": ehr.StatusFulfilled, "cancelled": ehr.StatusCancelled, "entered-in-error": ehr.StatusCancelled,
		"noshow": ehr.StatusNoShow,
	}
	byStatus := map[ehr.AppointmentStatus][]string{}
	i := 0
	for code, want := range codes {
		i++
		id := srv.Create(t, map[string]any{
			"resourceType": "Appointment",
			"status":       code,
			"start":        start.Add(time.Duration(i) * time.Hour).Format(time.RFC3339),
			"end":          start.Add(time.Duration(i)*time.Hour + 30*time.Minute).Format(time.RFC3339),
			"participant": []any{map[string]any{
				"actor": map[string]any{"reference": "Practitioner/status-agent"}, "status": "accepted",
			}},
		})["id"].(string)
		got, err := sch.GetAppointment(t.Context(), id)
		if err != nil {
			t.Fatalf("GetAppointment(%s): %v", code, err)
		}
		if got.Status != want || got.AgentID != "status-agent" || got.Source != "medplum" || got.ExternalID != id {
			t.Errorf("%s: read %+v, want status %s", code, got, want)
		}
		byStatus[want] = append(byStatus[want], id)
	}
	for _, st := range ehr.AppointmentStatuses {
		pg, err := sch.ListAppointments(t.Context(), ehr.AppointmentFilter{AgentID: "status-agent", Status: st, Limit: 50})
		if err != nil {
			t.Fatalf("ListAppointments(%s): %v", st, err)
		}
		var got []string
		for _, a := range pg.Items {
			got = append(got, a.ID)
		}
		if !sameIDs(got, byStatus[st]) {
			t.Errorf("ListAppointments(%s) = %v, want %v", st, got, byStatus[st])
		}
	}
}

// Every field the scheduler writes comes back from Medplum as it was
// given; cancel and reschedule keep them.
func TestIntegrationFHIRScheduler_RoundTripsEveryFieldThroughTheServer(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey))
	sch := fhir.NewScheduler(newEHRClient(t, srv.URL(), testAPIKey))
	plus2 := time.FixedZone("", 2*3600)
	start := time.Date(time.Now().Year()+1, 4, 5, 10, 15, 0, 0, plus2)
	in := ehr.Appointment{
		AgentID: "prac-1", Start: start, End: start.Add(50 * time.Minute), Reason: "Knee pain, left",
		LocationID: "loc-9",
		Patient: ehr.PatientContact{FirstName: "Zoë Ann", LastName: "d'Arcy", DateOfBirth: "1970-12-31",
			Email: "zoe@example.org", Phone: "+44 20 7946 0000"},
	}
	before := time.Now().Add(-time.Second)
	got, err := sch.CreateAppointment(t.Context(), in)
	if err != nil {
		t.Fatalf("CreateAppointment: %v", err)
	}
	check := func(what string, a ehr.Appointment, status ehr.AppointmentStatus, start, end time.Time) {
		t.Helper()
		if a.ID != got.ID || a.ExternalID != got.ID || a.Source != "medplum" || a.Status != status ||
			a.AgentID != in.AgentID || !a.Start.Equal(start) || !a.End.Equal(end) || a.Reason != in.Reason ||
			a.LocationID != in.LocationID || a.Patient != in.Patient {
			t.Errorf("%s = %+v\nwant %+v (status %s)", what, a, in, status)
		}
		if a.CreatedAt.Before(before) || a.CreatedAt.After(time.Now()) || a.UpdatedAt.Before(a.CreatedAt.Truncate(time.Second)) {
			t.Errorf("%s: createdAt %v, updatedAt %v", what, a.CreatedAt, a.UpdatedAt)
		}
	}
	check("created", got, ehr.StatusBooked, in.Start, in.End)
	read, err := sch.GetAppointment(t.Context(), got.ID)
	if err != nil {
		t.Fatalf("GetAppointment: %v", err)
	}
	check("read", read, ehr.StatusBooked, in.Start, in.End)
	moved, err := sch.RescheduleAppointment(t.Context(), got.ID, start.Add(24*time.Hour), start.Add(25*time.Hour))
	if err != nil {
		t.Fatalf("RescheduleAppointment: %v", err)
	}
	check("moved", moved, ehr.StatusBooked, start.Add(24*time.Hour), start.Add(25*time.Hour))
	if !moved.CreatedAt.Equal(got.CreatedAt) || !moved.UpdatedAt.After(got.UpdatedAt) {
		t.Errorf("moved: createdAt %v (was %v), updatedAt %v (was %v)", moved.CreatedAt, got.CreatedAt, moved.UpdatedAt, got.UpdatedAt)
	}
	cancelled, err := sch.CancelAppointment(t.Context(), got.ID, "Patient is travelling")
	if err != nil {
		t.Fatalf("CancelAppointment: %v", err)
	}
	check("cancelled", cancelled, ehr.StatusCancelled, start.Add(24*time.Hour), start.Add(25*time.Hour))
	if _, err := sch.CancelAppointment(t.Context(), got.ID, ""); !errors.Is(err, ehr.ErrAlreadyCancelled) {
		t.Errorf("cancel again: %v, want ErrAlreadyCancelled", err)
	}
	_, stored := srv.Get(t, "Appointment/"+got.ID)
	if r, _ := stored["cancelationReason"].(map[string]any); r["text"] != "Patient is travelling" {
		t.Errorf("stored cancelationReason = %v", stored["cancelationReason"])
	}
}

// A POST whose answer is lost on the way (a proxy turns it into a 503
// after Medplum stored it) is retried by ehrhttp; the conditional create
// finds the first appointment instead of booking a second.
func TestIntegrationFHIRScheduler_ARetriedBookingIsStoredOnce(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey))
	var mu sync.Mutex
	posts := 0
	front := srv.Front(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		mu.Lock()
		isFirst := r.Method == http.MethodPost && posts == 0
		if r.Method == http.MethodPost {
			posts++
		}
		mu.Unlock()
		if isFirst {
			next.ServeHTTP(httptest.NewRecorder(), r)
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})

	client, err := ehrhttp.New(ehrhttp.Config{
		Name: "medplum", BaseURL: front, RetryAttempts: 2, Timeout: 5 * time.Second,
		Auth: ehrhttp.AuthConfig{Type: ehrhttp.AuthAPIKey, APIKey: testAPIKey},
	}, ehrhttp.WithBackoff(time.Millisecond, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	sch := fhir.NewScheduler(client)
	start := time.Date(time.Now().Year()+1, 6, 7, 9, 0, 0, 0, time.UTC)
	got, err := sch.CreateAppointment(t.Context(), ehr.Appointment{
		AgentID: "retry-agent", Start: start, End: start.Add(30 * time.Minute),
		Patient: ehr.PatientContact{FirstName: "Al", LastName: "Bo", DateOfBirth: "1999-01-01", Email: "al@example.org"},
	})
	if err != nil {
		t.Fatalf("CreateAppointment: %v", err)
	}
	_, bundle := srv.Get(t, "Appointment?actor=Practitioner/retry-agent")
	entries, _ := bundle["entry"].([]any)
	if posts != 2 || len(entries) != 1 {
		t.Fatalf("%d POSTs, %d appointments stored; want 2 and 1", posts, len(entries))
	}
	if id := entries[0].(map[string]any)["resource"].(map[string]any)["id"]; id != got.ID {
		t.Errorf("stored %v, returned %s", id, got.ID)
	}
}

func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
