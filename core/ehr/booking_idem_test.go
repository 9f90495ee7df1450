package ehr

import (
	"fmt"
	"strings"
	"testing"
)

func TestBook_IdempotencyKeepsNoPatientDataAndReplaysFromTheEHR(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.Patient = PatientContact{FirstName: "Zebulon", LastName: "Quixwell", DateOfBirth: "1971-07-19", Email: "zq.marker@example.org", Phone: "+1 555 013 7799"}
	r.IdempotencyKey = "key-1"
	first, err := s.Book(caller("u"), r)
	if err != nil {
		t.Fatal(err)
	}
	idem := s.idem.(*IdempotencyStoreMock)
	stored := idem.CompleteCalls()[0]
	fp := idem.ClaimCalls()[0].Fingerprints[0]
	for _, v := range []string{fmt.Sprintf("%+v", stored.Outcome), fp} {
		for _, marker := range []string{"Zebulon", "Quixwell", "1971-07-19", "zq.marker", "555 013 7799", "5550137799", "check-up"} {
			if strings.Contains(v, marker) {
				t.Fatalf("stored %q holds %q", v, marker)
			}
		}
	}
	if want := (Outcome{System: "test", AppointmentID: first.Appointment.ID, Status: "booked"}); stored.Outcome != want {
		t.Fatalf("outcome %+v: want only the system, id and status", stored.Outcome)
	}
	if recs := s.bookings.(*memBookingLog).RecordCalls(); len(recs) != 1 || recs[0].B.Subject != "u" || recs[0].B.AppointmentID != first.Appointment.ID {
		t.Fatalf("booking recorded with the outcome: %+v", recs)
	}
	// The fingerprint is keyed: another key gives another one.
	other := NewScheduling(FixedSystems{SchedulingName: "test", SchedulingEHR: c}, s.holds, idem, s.bookings, s.counter, s.tx, SchedulingConfig{FingerprintKeys: [][]byte{[]byte("another key, 32 bytes long.....")}})
	if other.fingerprints("u", "", r)[0] == fp || s.fingerprints("u", "", r)[0] != fp || s.fingerprints("v", "", r)[0] == fp {
		t.Fatal("the fingerprint does not depend on the key and the caller alone")
	}

	// A repeat reads the appointment from the EHR as it is now.
	if _, err := s.Cancel(caller("u"), "", first.Appointment.ID, ""); err != nil {
		t.Fatal(err)
	}
	gets := len(c.GetAppointmentCalls())
	again, err := s.Book(caller("u"), r)
	if err != nil || !again.Replayed || again.Appointment.ID != first.Appointment.ID || again.Appointment.Status != StatusCancelled {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if len(c.GetAppointmentCalls()) != gets+1 || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatal("the replay did not read the appointment again, or booked anew")
	}
}
