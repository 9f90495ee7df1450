package ehr

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// ownBookings records n bookings of sub in c's system ("test"), the
// appointments in c, one a day from 2029-01-01; cancelled marks every one
// cancelled, in c and in the booking log (through the service).
func ownBookings(t *testing.T, s *Scheduling, c *calendar, sub string, n int, cancelled bool) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		start := time.Date(2029, 1, 1, 9, 0, 0, 0, time.UTC).AddDate(0, 0, i)
		ids[i] = fmt.Sprintf("%s-%03d", sub, i)
		st := StatusFulfilled
		if cancelled {
			st = StatusCancelled
		}
		c.appts[ids[i]] = Appointment{ID: ids[i], AgentID: "dr-1", Start: start, End: start.Add(30 * time.Minute), Status: st, Source: "test"}
		if _, err := s.bookings.Record(context.Background(), Booking{Subject: sub, System: "test", AppointmentID: ids[i], Start: start}); err != nil {
			t.Fatal(err)
		}
		if cancelled {
			if err := s.bookings.Changed(context.Background(), "test", "", ids[i], start, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	return ids
}

// A patient's listing reads its bookings from the EHR a batch at a time,
// never one by one, and not at all those it cancelled through the
// service, unless it asks for cancelled ones.
func TestAppointments_APatientsListingReadsItsBookingsInBatches(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	pat := patientCaller("pat")
	ownBookings(t, s, c, "pat", 250, false)
	p, err := s.Appointments(pat, AppointmentFilter{Status: StatusFulfilled, Limit: 100, Page: 3})
	if err != nil || p.TotalCount != 250 || len(p.Items) != 50 || p.Items[0].ID != "pat-200" {
		t.Fatalf("listing: %d of %d, %v", len(p.Items), p.TotalCount, err)
	}
	calls := c.GetAppointmentsCalls()
	if len(calls) != 3 || len(calls[0].Ids) != ownReadBatch || len(c.GetAppointmentCalls()) != 0 {
		t.Fatalf("%d batch reads (%d one by one) for a listing of 250; want 3 of at most %d", len(calls), len(c.GetAppointmentCalls()), ownReadBatch)
	}
	t.Logf("EHR calls for one patient listing of 250 bookings: %d (one by one before: 250)", len(calls))
}

func TestAppointments_APatientsListingSkipsWhatItCancelledUnlessAsked(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	pat := patientCaller("pat")
	ownBookings(t, s, c, "pat", maxOwnAppointments-1, true) // booked and cancelled 499 times
	live := ownBookings(t, s, c, "other", 1, false)[0]
	if _, err := s.bookings.Record(context.Background(), Booking{Subject: "pat", System: "test", AppointmentID: live}); err != nil {
		t.Fatal(err)
	}
	p, err := s.Appointments(pat, AppointmentFilter{})
	if err != nil || p.TotalCount != 1 || p.Items[0].ID != live {
		t.Fatalf("listing: %+v %v; want its one live booking", p, err)
	}
	if calls := c.GetAppointmentsCalls(); len(calls) != 1 || len(calls[0].Ids) != 1 {
		t.Fatalf("the EHR was asked for %+v; want the live booking only", calls)
	}
	p, err = s.Appointments(pat, AppointmentFilter{Status: StatusCancelled})
	if err != nil || p.TotalCount != maxOwnAppointments-1 {
		t.Fatalf("asked for the cancelled ones: %d, %v", p.TotalCount, err)
	}
	if n := len(c.GetAppointmentsCalls()); n != 1+maxOwnAppointments/ownReadBatch {
		t.Fatalf("%d batch reads in all", n)
	}
	ownBookings(t, s, c, "pat2", maxOwnAppointments+1, false)
	if _, err := s.Appointments(patientCaller("pat2"), AppointmentFilter{}); !errors.Is(err, ErrTooManyToList) {
		t.Fatalf("over %d live bookings: %v", maxOwnAppointments, err)
	}
}

// Each batch a listing reads beyond the first counts against the caller's
// rate limit: its listings spend the EHR's shared limit no faster than
// its own calls may.
func TestAppointments_APatientsListingBatchesCountAgainstItsRateLimit(t *testing.T) {
	c := newCalendar(chicago)
	s := schedulingWith(c, SchedulingConfig{FingerprintKeys: testFingerprintKeys, RateLimit: 5})
	pat := patientCaller("pat")
	ownBookings(t, s, c, "pat", 250, false) // 3 batches: the call counts 1, and 2 more
	if _, err := s.Appointments(pat, AppointmentFilter{}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Appointments(pat, AppointmentFilter{})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Kind != core.KindRateLimited || ce.RetryAfter <= 0 {
		t.Fatalf("the second listing (calls 4 to 6 of a limit of 5): %v; want rate limited", err)
	}
	if n := len(c.GetAppointmentsCalls()); n != 5 {
		t.Fatalf("%d batch reads; want 3, then 2 before the refusal", n)
	}
}

// An EHR that answers a batch read with appointments not asked for (a
// server ignoring the search by id) shows the patient nothing of them.
func TestAppointments_APatientsListingShowsOnlyWhatItAskedFor(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	ids := ownBookings(t, s, c, "pat", 2, false)
	other := otherPatients(c, "someone-elses")
	c.GetAppointmentsFunc = func(context.Context, []string) ([]Appointment, error) {
		return []Appointment{c.appts[ids[0]], other, c.appts[ids[0]], c.appts[ids[1]]}, nil
	}
	p, err := s.Appointments(patientCaller("pat"), AppointmentFilter{})
	if err != nil || p.TotalCount != 2 || p.Items[0].ID != ids[0] || p.Items[1].ID != ids[1] {
		t.Fatalf("listing: %+v %v; want its two, once each", p, err)
	}
}
