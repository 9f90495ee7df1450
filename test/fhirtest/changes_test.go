package fhirtest_test

import (
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// medplumAppointment is a as a front desk books it in the EHR: a booked
// Appointment with the practitioner and a contained patient.
func medplumAppointment(a ehr.Appointment) map[string]any {
	return map[string]any{
		"resourceType": "Appointment",
		"status":       "booked",
		"description":  a.Reason,
		"start":        a.Start.UTC().Format(time.RFC3339),
		"end":          a.End.UTC().Format(time.RFC3339),
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

// The change feed contract against Medplum, one server for every subtest
// (the suite looks only at what it made), pages of pageSize: every change
// is made directly in the server (POST and PUT), and the feed reads it
// back by _lastUpdated.
func TestIntegrationFHIRScheduler_ChangeFeedContract(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize), fhirtest.WithRequestLog())
	sch := fhir.NewScheduler(newEHRClient(t, srv.URL(), testAPIKey))
	update := func(t *testing.T, id string, change func(r map[string]any)) {
		t.Helper()
		status, r := srv.Get(t, "Appointment/"+id)
		if status != 200 {
			t.Fatalf("GET Appointment/%s: %d", id, status)
		}
		change(r)
		srv.Update(t, r)
	}
	codes := map[ehr.AppointmentStatus]string{ehr.StatusCheckedIn: "arrived", ehr.StatusFulfilled: "fulfilled",
		ehr.StatusNoShow: "noshow", ehr.StatusPending: "pending", ehr.StatusBooked: "booked", ehr.StatusCancelled: "cancelled"}
	ehrtest.TestChangeFeed(t, func(*testing.T) ehrtest.ChangeFeedBackend {
		return ehrtest.ChangeFeedBackend{
			Feed: sch, Scheduler: sch,
			AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return srv.AddAgent(t, a, free) },
			Book: func(t *testing.T, a ehr.Appointment) string {
				return srv.Create(t, medplumAppointment(a))["id"].(string)
			},
			Cancel: func(t *testing.T, id string) {
				update(t, id, func(r map[string]any) { r["status"] = "cancelled" })
			},
			Move: func(t *testing.T, id string, start, end time.Time) {
				update(t, id, func(r map[string]any) {
					r["start"], r["end"] = start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339)
				})
			},
			SetStatus: func(t *testing.T, id string, st ehr.AppointmentStatus) {
				update(t, id, func(r map[string]any) { r["status"] = codes[st] })
			},
		}
	})
}
