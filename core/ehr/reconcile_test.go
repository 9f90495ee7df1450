package ehr

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestReconcile_RecordsWhatTheEHRHoldsAndReleasesTheRest(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	holds := s.holds.(*memHolds)
	create := c.CreateAppointmentFunc
	lost := 0
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		lost++
		if lost == 1 { // the first lands in the EHR, the second does not
			if _, err := create(ctx, a); err != nil {
				return Appointment{}, err
			}
		}
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	keyed := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	keyed.IdempotencyKey = "k"
	if _, err := s.Book(caller("u"), keyed); err == nil {
		t.Fatal("want a time-out")
	}
	if _, err := s.Book(caller("u"), request("2030-03-04T10:00:00-06:00", "2030-03-04T10:30:00-06:00")); err == nil {
		t.Fatal("want a time-out")
	}
	// Nothing is due before the settle time.
	if r, err := s.Reconcile(context.Background(), 10); err != nil || r != (Reconciled{}) {
		t.Fatalf("early: %+v %v", r, err)
	}
	holds.now = func() time.Time { return nowTest.Add(unknownSettle + time.Second) }
	r, err := s.Reconcile(context.Background(), 10)
	if err != nil || r != (Reconciled{Recorded: 1, Released: 1}) {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if holds.count() != 0 {
		t.Fatal("holds left")
	}
	ids, _ := s.bookings.BookedBy(context.Background(), "u", "")
	if len(ids) != 1 {
		t.Fatalf("booked by u: %v", ids)
	}
	if got := eventsOf(s); len(got) != 1 || got[0].Type != core.AppointmentBooked {
		t.Fatalf("events: %+v", got)
	}
	// The key's repeat answers the appointment now, without the EHR's create.
	c.CreateAppointmentFunc = create
	b, err := s.Book(caller("u"), keyed)
	if err != nil || !b.Replayed || b.Appointment.ID != ids[0].AppointmentID {
		t.Fatalf("repeat after reconcile: %+v %v", b, err)
	}
}

func TestReconcile_AnEHRFailureIsTriedAgainLater(t *testing.T) {
	c := newCalendar(chicago)
	c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	down := &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: "down"}
	c.FindAppointmentFunc = func(context.Context, Appointment) (Appointment, bool, error) { return Appointment{}, false, down }
	s := scheduling(c)
	holds := s.holds.(*memHolds)
	if _, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); err == nil {
		t.Fatal("want a time-out")
	}
	holds.now = func() time.Time { return nowTest.Add(time.Hour) }
	r, err := s.Reconcile(context.Background(), 10)
	if !errors.Is(err, down) || r != (Reconciled{Failed: 1}) || holds.count() != 1 {
		t.Fatalf("%+v %v, %d holds", r, err, holds.count())
	}
}
