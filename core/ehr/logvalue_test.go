package ehr

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The markers are patient data; none may reach a log line.
var patientMarkers = []string{
	"MarkerFamily", "MarkerGiven", "MarkerText", "1911-11-11", "MarkerGender", "MarkerMRN", "urn:marker",
	"MarkerPhone", "marker@example.org", "MarkerStreet", "MarkerCity", "MarkerState", "MK-00000", "MarkerCountry",
	"MarkerFirst", "MarkerLast", "MarkerReason",
}

func markerName() HumanName {
	return HumanName{Family: "MarkerFamily", Given: []string{"MarkerGiven"}, Text: "MarkerText"}
}

func markerIdentifiers() []Identifier {
	return []Identifier{{System: "urn:marker", Value: "MarkerMRN", Type: "MarkerMRN"}}
}

func markerTelecom() []ContactPoint {
	return []ContactPoint{{System: "MarkerPhone", Value: "MarkerPhone", Use: "MarkerPhone"}, {Value: "marker@example.org"}}
}

func markerAddress() []Address {
	return []Address{{Line: []string{"MarkerStreet"}, City: "MarkerCity", State: "MarkerState", PostalCode: "MK-00000", Country: "MarkerCountry"}}
}

func markerContact() PatientContact {
	return PatientContact{FirstName: "MarkerFirst", LastName: "MarkerLast", DateOfBirth: "1911-11-11", Email: "marker@example.org", Phone: "MarkerPhone"}
}

func TestLogValue_PatientDataIsRedacted(t *testing.T) {
	updated := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		value any
		want  []string // what the line must still show
	}{
		{"patient", Patient{ID: "pat-id-1", Source: "clinic-a", Name: markerName(), BirthDate: "1911-11-11", Gender: "MarkerGender",
			Identifiers: markerIdentifiers(), Telecom: markerTelecom(), Address: markerAddress(), LastUpdated: updated},
			[]string{`"id":"pat-id-1"`, `"source":"clinic-a"`}},
		{"person", Person{ID: "person-id-1", Sources: []SourceRef{{Source: "clinic-a", PatientID: "1"}, {Source: "clinic-b", PatientID: "2"}},
			Name: markerName(), BirthDate: "1911-11-11", Gender: "MarkerGender", Identifiers: markerIdentifiers(),
			Telecom: markerTelecom(), Address: markerAddress(), LastUpdated: updated},
			[]string{`"id":"person-id-1"`, `"sources":2`}},
		{"name", markerName(), []string{"[redacted]"}},
		{"identifier", markerIdentifiers()[0], []string{"[redacted]"}},
		{"contact point", markerTelecom()[0], []string{"[redacted]"}},
		{"address", markerAddress()[0], []string{"[redacted]"}},
		{"patient contact", markerContact(), []string{"[redacted]"}},
		{"appointment", Appointment{ID: "appt-id-1", AgentID: "agent-id-1", Start: updated, End: updated.Add(time.Hour),
			Status: StatusBooked, Reason: "MarkerReason", LocationID: "loc-1", Patient: markerContact(), Source: "clinic-a",
			ExternalID: "ext-1", CreatedAt: updated, UpdatedAt: updated},
			[]string{`"id":"appt-id-1"`, `"agentId":"agent-id-1"`, `"status":"booked"`}},
		{"search request", SearchRequest{Query: "MarkerGiven MarkerFamily 1911-11-11", SearchType: "patient_record",
			UpdatedFrom: updated, UpdatedTo: updated, Location: "site-1", Page: PageRequest{Page: 2, Limit: 10}},
			[]string{`"searchType":"patient_record"`, `"page":2`}},
		{"booking request", BookingRequest{AgentID: "agent-id-1", Start: at("2030-01-01T09:00:00Z"), DurationMinutes: 30, Reason: "MarkerReason",
			Patient: markerContact(), IdempotencyKey: "k"}, []string{`"agentId":"agent-id-1"`}},
		{"patient query", PatientQuery{Text: "MarkerText", Family: "MarkerFamily", Given: "MarkerGiven", BirthDate: "1911-11-11",
			Gender: "MarkerGender", Identifier: "urn:marker|MarkerMRN", Phone: "MarkerPhone", Max: 50},
			[]string{`"max":50`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&buf, nil))
			log.Info("event", "value", tc.value)
			log.Info("event", slog.Group("g", "nested", tc.value))
			log.With("with", tc.value).Info("event")
			out := buf.String()
			for _, m := range patientMarkers {
				if strings.Contains(out, m) {
					t.Errorf("the log holds %q: %s", m, out)
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("the log lacks %s: %s", w, out)
				}
			}
		})
	}
}
