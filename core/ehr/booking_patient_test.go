package ehr

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestBook_APatientHoldsAtMostTwentyFutureAppointments(t *testing.T) {
	agents := make([]Agent, MaxFutureAppointments+1)
	for i := range agents {
		agents[i] = Agent{ID: fmt.Sprint("dr-", i), Timezone: "America/Chicago"}
	}
	c := newCalendar(agents...)
	s := scheduling(c)
	pat := patientCaller("pat")
	book := func(i int) error {
		r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
		r.AgentID = agents[i].ID
		_, err := s.Book(pat, r)
		return err
	}
	for i := range MaxFutureAppointments {
		if err := book(i); err != nil {
			t.Fatalf("booking %d: %v", i+1, err)
		}
	}
	if err := book(MaxFutureAppointments); !errors.Is(err, ErrAppointmentLimit) {
		t.Fatalf("booking %d: %v", MaxFutureAppointments+1, err)
	}
	if core.KindOf(ErrAppointmentLimit) != core.KindConflict {
		t.Fatal("the limit is not a conflict (409)")
	}
	// A cancelled one frees a place; staff are not limited.
	ids, _ := s.bookings.BookedBy(context.Background(), "pat", "")
	if _, err := s.Cancel(pat, "", ids[0].AppointmentID, ""); err != nil {
		t.Fatal(err)
	}
	if err := book(MaxFutureAppointments); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	r := request("2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00")
	if _, err := s.Book(caller("reception"), r); err != nil {
		t.Fatalf("staff: %v", err)
	}
}

func TestAppointments_APatientIsRateLimited(t *testing.T) {
	c := newCalendar(chicago)
	c.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, nil }
	s := schedulingWith(c, SchedulingConfig{FingerprintKeys: testFingerprintKeys, RateLimit: 3})
	pat := patientCaller("pat")
	for i := range 3 {
		if _, err := s.Appointments(pat, AppointmentFilter{}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := s.Appointments(pat, AppointmentFilter{})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Kind != core.KindRateLimited || ce.RetryAfter <= 0 {
		t.Fatalf("fourth call: %v", err)
	}
	if _, err := s.Cancel(pat, "", "any", ""); core.KindOf(err) != core.KindRateLimited {
		t.Fatalf("cancel past the limit: %v", err)
	}
	for range 5 { // staff are limited by nothing here
		if _, err := s.Appointments(caller("reception"), AppointmentFilter{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCancelAndReschedule(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	b, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T10:00:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	id := b.Appointment.ID
	// Moving within its own time is fine: its own slot counts as free.
	moved, err := s.Reschedule(caller("u"), RescheduleRequest{ID: id, Start: at("2030-03-04T09:30:00-06:00"), End: at("2030-03-04T10:30:00-06:00")})
	if err != nil || !moved.Start.Equal(time.Date(2030, 3, 4, 15, 30, 0, 0, time.UTC)) {
		t.Fatalf("reschedule: %+v %v", moved, err)
	}
	other, _ := s.Book(caller("u"), request("2030-03-04T11:00:00-06:00", "2030-03-04T12:00:00-06:00"))
	if _, err := s.Reschedule(caller("u"), RescheduleRequest{ID: id, Start: at("2030-03-04T11:00:00-06:00"), End: at("2030-03-04T11:30:00-06:00")}); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("onto another appointment: %v", err)
	}
	if _, err := s.Reschedule(caller("u"), RescheduleRequest{ID: id, Start: at("2030-03-04T11:00:00-06:00"), End: at("2030-03-04T10:00:00-06:00")}); !errors.Is(err, ErrInvalidAppointment) {
		t.Fatalf("end before start: %v", err)
	}
	if a, err := s.Cancel(caller("u"), "", other.Appointment.ID, "sick"); err != nil || a.Status != StatusCancelled {
		t.Fatalf("cancel: %+v %v", a, err)
	}
	if _, err := s.Cancel(caller("u"), "", other.Appointment.ID, ""); !errors.Is(err, ErrAlreadyCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := s.Reschedule(caller("u"), RescheduleRequest{ID: other.Appointment.ID, Start: at("2030-03-05T09:00:00-06:00"), End: at("2030-03-05T09:30:00-06:00")}); !errors.Is(err, ErrAlreadyCancelled) {
		t.Fatalf("reschedule a cancelled one: %v", err)
	}
	if _, err := s.Cancel(caller("u"), "", "nope", ""); !errors.Is(err, ErrAppointmentNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestAppointments_NeedScopes(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	none := core.WithActor(context.Background(), core.Actor{Subject: "u"})
	readOnly := core.WithActor(context.Background(), core.Actor{Subject: "u", Scopes: core.ParseScopes("user/Appointment.rs patient/Appointment.s")})
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	for _, ctx := range []context.Context{none, readOnly} {
		if _, err := s.Book(ctx, r); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("book: %v", err)
		}
		if _, err := s.Cancel(ctx, "", "appt-1", ""); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("cancel: %v", err)
		}
		if _, err := s.Reschedule(ctx, RescheduleRequest{ID: "appt-1", Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")}); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("reschedule: %v", err)
		}
	}
	if _, err := s.Appointments(none, AppointmentFilter{}); !errors.Is(err, core.ErrInsufficientScope) {
		t.Fatalf("list: %v", err)
	}
	if len(c.CreateAppointmentCalls())+len(c.GetAppointmentCalls()) != 0 {
		t.Fatal("the EHR was asked for a caller without the scope")
	}
	// Agents need only a valid token.
	if _, err := s.Agent(none, "", "dr-1"); err != nil {
		t.Fatalf("agent: %v", err)
	}
	if _, err := s.Availability(none, AvailabilityRequest{AgentID: "dr-1", From: day("2030-03-04"), To: day("2030-03-04"), Minutes: 30}); err != nil {
		t.Fatalf("availability: %v", err)
	}
}

func TestAppointments_APatientReachesOnlyItsOwn(t *testing.T) {
	c := newCalendar(chicago)
	c.ListAppointmentsFunc = func(_ context.Context, f AppointmentFilter) (Page[Appointment], error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return Page[Appointment]{TotalCount: len(c.appts), Page: f.Page, Limit: f.Limit}, nil
	}
	s := scheduling(c)
	ana, ben := patientCaller("ana"), patientCaller("ben")
	book := func(ctx context.Context, start, end, key string) Appointment {
		t.Helper()
		r := request(start, end)
		r.IdempotencyKey = key
		b, err := s.Book(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return b.Appointment
	}
	a1 := book(ana, "2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00", "")
	a2 := book(ana, "2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00", "k1")
	b1 := book(ben, "2030-03-04T10:00:00-06:00", "2030-03-04T10:30:00-06:00", "")
	book(caller("staff"), "2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00", "")

	p, err := s.Appointments(ana, AppointmentFilter{})
	if err != nil || p.TotalCount != 2 || len(p.Items) != 2 || p.Items[0].ID != a2.ID || p.Items[1].ID != a1.ID {
		t.Fatalf("ana's list (by start): %+v %v", p, err)
	}
	if len(c.ListAppointmentsCalls()) != 0 {
		t.Fatal("a patient's listing asked the EHR for every appointment")
	}
	p, _ = s.Appointments(ana, AppointmentFilter{From: time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), Limit: 1, Page: 1})
	if p.TotalCount != 1 || p.Items[0].ID != a1.ID {
		t.Fatalf("filtered within ana's: %+v", p)
	}
	p, _ = s.Appointments(ana, AppointmentFilter{Page: 2, Limit: 1})
	if p.TotalCount != 2 || len(p.Items) != 1 || p.Items[0].ID != a1.ID {
		t.Fatalf("page 2: %+v", p)
	}

	// Another's appointment, or none, is not found for a patient.
	for _, id := range []string{b1.ID, "appt-404"} {
		if _, err := s.Cancel(ana, "", id, ""); !errors.Is(err, ErrAppointmentNotFound) {
			t.Fatalf("ana cancels %s: %v", id, err)
		}
		if _, err := s.Reschedule(ana, RescheduleRequest{ID: id, Start: at("2030-03-06T09:00:00-06:00"), End: at("2030-03-06T09:30:00-06:00")}); !errors.Is(err, ErrAppointmentNotFound) {
			t.Fatalf("ana moves %s: %v", id, err)
		}
	}
	if c.appts[b1.ID].Status == StatusCancelled {
		t.Fatal("ben's appointment was cancelled by ana")
	}
	if a, err := s.Cancel(ana, "", a1.ID, ""); err != nil || a.Status != StatusCancelled {
		t.Fatalf("ana cancels her own: %+v %v", a, err)
	}
	if _, err := s.Reschedule(ana, RescheduleRequest{ID: a2.ID, Start: at("2030-03-06T09:00:00-06:00"), End: at("2030-03-06T09:30:00-06:00")}); err != nil {
		t.Fatalf("ana moves her own: %v", err)
	}
	// Staff reach every appointment.
	if _, err := s.Cancel(caller("staff"), "", b1.ID, ""); err != nil {
		t.Fatalf("staff cancels ben's: %v", err)
	}
	if p, err := s.Appointments(caller("staff"), AppointmentFilter{}); err != nil || p.TotalCount != 4 {
		t.Fatalf("staff list: %+v %v", p, err)
	}
}
