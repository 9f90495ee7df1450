package ehr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestBook_ChecksTheRequest(t *testing.T) {
	ok := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	tests := []struct {
		name, mention string
		edit          func(*BookingRequest)
	}{
		{"start in the past", "start must be in the future", func(r *BookingRequest) {
			r.Start, r.End = at("2030-02-01T09:00:00-06:00"), at("2030-02-01T09:30:00-06:00")
		}},
		{"start without offset", "start must be an RFC 3339", func(r *BookingRequest) { r.Start = at("2030-03-04 09:00") }},
		{"end before start", "end must be after start", func(r *BookingRequest) { r.End = at("2030-03-04T08:00:00-06:00") }},
		{"shorter than 5 minutes", "at least 5 minutes", func(r *BookingRequest) { r.End = at("2030-03-04T09:04:00-06:00") }},
		{"longer than 8 hours", "at most 8 hours", func(r *BookingRequest) { r.End = at("2030-03-04T17:01:00-06:00") }},
		{"end and duration", "exclusive", func(r *BookingRequest) { r.DurationMinutes = 30 }},
		{"neither end nor duration", "durationMinutes is required", func(r *BookingRequest) { r.End = at("") }},
		{"no agent", "agentId is required", func(r *BookingRequest) { r.AgentID = " " }},
		{"no first name", "patient.firstName is required", func(r *BookingRequest) { r.Patient.FirstName = "" }},
		{"no last name", "patient.lastName is required", func(r *BookingRequest) { r.Patient.LastName = "" }},
		{"birth date in the future", "dateOfBirth must be in the past", func(r *BookingRequest) { r.Patient.DateOfBirth = "2031-01-01" }},
		{"birth date not a date", "dateOfBirth must be a date", func(r *BookingRequest) { r.Patient.DateOfBirth = "01/02/1980" }},
		{"bad e-mail", "patient.email", func(r *BookingRequest) { r.Patient.Email = "ana@" }},
		{"no contact", "valid email or phone", func(r *BookingRequest) { r.Patient.Email = "" }},
		{"bad phone", "patient.phone", func(r *BookingRequest) { r.Patient.Email, r.Patient.Phone = "", "call me" }},
		{"phone of 16 digits", "patient.phone", func(r *BookingRequest) { r.Patient.Email, r.Patient.Phone = "", "1234567890123456" }},
		{"e-mail with an empty domain label", "patient.email", func(r *BookingRequest) { r.Patient.Email = "ana@example..com" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCalendar(chicago)
			r := ok
			tt.edit(&r)
			_, err := scheduling(c).Book(caller("u"), r)
			if !errors.Is(err, ErrInvalidAppointment) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("got %v, want validation naming %q", err, tt.mention)
			}
			if len(c.CreateAppointmentCalls()) != 0 {
				t.Fatal("an invalid request was booked")
			}
		})
	}
	r := ok
	r.End, r.DurationMinutes, r.Patient.Email, r.Patient.Phone = at(""), 45, "", "+1 512 555 0100"
	b, err := scheduling(newCalendar(chicago)).Book(caller("u"), r)
	if err != nil || b.Appointment.End.Sub(b.Appointment.Start) != 45*time.Minute || b.Appointment.Status != StatusBooked {
		t.Fatalf("duration booking: %+v %v", b, err)
	}
}

func TestBook_AgentMustExistAndBeFree(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T10:00:00-06:00")
	if _, err := s.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	overlap := request("2030-03-04T09:30:00-06:00", "2030-03-04T10:30:00-06:00")
	if _, err := s.Book(caller("u"), overlap); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("overlapping booking: %v", err)
	}
	evening := request("2030-03-04T17:30:00-06:00", "2030-03-04T18:30:00-06:00")
	if _, err := s.Book(caller("u"), evening); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("booking past the working day: %v", err)
	}
	unknown := r
	unknown.AgentID = "dr-404"
	if _, err := s.Book(caller("u"), unknown); !errors.Is(err, ErrAgentNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	if len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("%d bookings", len(c.CreateAppointmentCalls()))
	}
}

func TestBook_ConcurrentBookingsOfTheSameTimeGiveOneAppointment(t *testing.T) {
	// In the bubble the EHR's booking takes a moment of fake time, so every
	// other booking runs to its end while the first is in the EHR.
	synctest.Test(t, func(t *testing.T) {
		c := newCalendar(chicago)
		create := c.CreateAppointmentFunc
		c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
			time.Sleep(5 * time.Millisecond)
			return create(ctx, a)
		}
		s := scheduling(c)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = s.Book(caller(fmt.Sprint("u", i)), request("2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00"))
			})
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrAgentUnavailable), errors.Is(err, ErrAgentBusy):
				conflicts++
			}
		}
		if ok != 1 || conflicts != 7 || len(c.appts) != 1 {
			t.Fatalf("%d booked, %d conflicts, %d appointments", ok, conflicts, len(c.appts))
		}
	})
}

func TestBook_IdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.IdempotencyKey = "key-1"
	first, err := s.Book(caller("u"), r)
	if err != nil || first.Replayed {
		t.Fatal(err)
	}
	again, err := s.Book(caller("u"), r)
	if err != nil || !again.Replayed || again.Appointment.ID != first.Appointment.ID || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("replay: %+v %v, %d bookings", again, err, len(c.CreateAppointmentCalls()))
	}
	other := r
	other.Reason = "something else"
	if _, err := s.Book(caller("u"), other); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := s.Book(caller("someone-else"), r); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("another caller's same key is a new request: %v", err)
	}

	// A refused first answer is replayed as refused.
	busy := r
	busy.IdempotencyKey = "key-2"
	if _, err := s.Book(caller("u"), busy); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatal(err)
	}
	delete(c.appts, first.Appointment.ID) // the time frees up
	if b, err := s.Book(caller("u"), busy); !errors.Is(err, ErrAgentUnavailable) || !b.Replayed {
		t.Fatalf("the first answer was 409; the repeat got %+v %v", b, err)
	}

	// An upstream failure that booked nothing is not stored: the same key
	// may try again.
	c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindUnavailable, Code: "circuit_open", Message: "down"}
	}
	retry := request("2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00")
	retry.IdempotencyKey = "key-3"
	if _, err := s.Book(caller("u"), retry); core.KindOf(err) != core.KindUnavailable {
		t.Fatal(err)
	}
	if len(s.idem.(*IdempotencyStoreMock).ReleaseCalls()) != 1 {
		t.Fatal("the key of a call that was never sent was kept")
	}
	if _, err := s.Book(caller("u"), BookingRequest{IdempotencyKey: "bad key"}); !errors.Is(err, ErrInvalidIdempotencyKey) {
		t.Fatalf("bad key: %v", err)
	}
}

func TestBook_BusyAgentIsRetriedWithTheSameKey(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	// Another booking of the agent, overlapping, is under way.
	other := Hold{ID: "h-other", Kind: HoldBook, AgentID: "dr-1", Subject: "x", System: "test",
		Start: time.Date(2030, 3, 4, 19, 15, 0, 0, time.UTC), End: time.Date(2030, 3, 4, 19, 45, 0, 0, time.UTC)}
	if err := s.holds.Take(context.Background(), other, time.Minute); err != nil {
		t.Fatal(err)
	}
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.IdempotencyKey = "key-1"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, ErrAgentBusy) {
		t.Fatalf("an overlapping hold: %v", err)
	}
	if len(c.CreateAppointmentCalls()) != 0 || len(c.FreePeriodsCalls()) != 0 {
		t.Fatal("the EHR was asked while the time was held by another booking")
	}
	// The same agent at another time is not held up.
	if _, err := s.Book(caller("v"), request("2030-03-04T15:00:00-06:00", "2030-03-04T15:30:00-06:00")); err != nil {
		t.Fatalf("another time of the agent: %v", err)
	}
	_ = s.holds.Release(context.Background(), other.ID)
	if b, err := s.Book(caller("u"), r); err != nil || b.Replayed {
		t.Fatalf("the retry with the same key was not a new request: %+v %v", b, err)
	}
	if n := s.holds.(*memHolds).count(); n != 0 {
		t.Fatalf("%d holds left after the bookings", n)
	}
}

func TestBook_DifferentAgentsDoNotWaitForEachOther(t *testing.T) {
	agents := make([]Agent, 10)
	for i := range agents {
		agents[i] = Agent{ID: fmt.Sprint("dr-", i), Timezone: "America/Chicago"}
	}
	c := newCalendar(agents...)
	// Every booking's EHR call waits until all ten are in the EHR at once:
	// bookings that waited for each other would never get there.
	var arrived sync.WaitGroup
	arrived.Add(len(agents))
	create := c.CreateAppointmentFunc
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		arrived.Done()
		arrived.Wait()
		return create(ctx, a)
	}
	s := scheduling(c)
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
			r.AgentID = agents[i].ID
			_, errs[i] = s.Book(caller("u"), r)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(c.appts) != len(agents) {
		t.Fatalf("%d appointments", len(c.appts))
	}
}

func TestBook_LostAnswerIsResumedWithTheSameKey(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	create := c.CreateAppointmentFunc
	timeout := &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		if _, err := create(ctx, a); err != nil { // booked, then the answer is lost
			return Appointment{}, err
		}
		return Appointment{}, timeout
	}
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "key-lost"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, timeout) {
		t.Fatalf("first: %v", err)
	}
	if len(s.idem.(*IdempotencyStoreMock).ReleaseCalls()) != 0 || s.holds.(*memHolds).count() != 1 {
		t.Fatal("a booking whose outcome is unknown gave up its key or its hold")
	}
	// The time stays held: nobody else books it meanwhile.
	if _, err := s.Book(caller("v"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); !errors.Is(err, ErrAgentBusy) {
		t.Fatalf("another caller, same time: %v", err)
	}
	c.CreateAppointmentFunc = create
	b, err := s.Book(caller("u"), r)
	if err != nil || b.Appointment.ID == "" {
		t.Fatalf("the repeat: %+v %v", b, err)
	}
	if len(c.appts) != 1 || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("%d appointments, %d creates: the repeat booked again", len(c.appts), len(c.CreateAppointmentCalls()))
	}
	if ids, _ := s.bookings.BookedBy(context.Background(), "u", ""); len(ids) != 1 || ids[0] != (OwnBooking{System: "test", AppointmentID: b.Appointment.ID}) {
		t.Fatalf("booked by u: %v", ids)
	}
	if again, err := s.Book(caller("u"), r); err != nil || !again.Replayed || again.Appointment.ID != b.Appointment.ID {
		t.Fatalf("a third repeat: %+v %v", again, err)
	}
	if n := s.holds.(*memHolds).count(); n != 0 {
		t.Fatalf("%d holds left", n)
	}
}

func TestBook_ResumedBookingNotInTheEHRIsBookedUnderTheSameReference(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	create := c.CreateAppointmentFunc
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: "link dropped"}
	}
	c.FindAppointmentFunc = func(context.Context, Appointment) (Appointment, bool, error) { return Appointment{}, false, nil }
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "key-1"
	if _, err := s.Book(caller("u"), r); core.KindOf(err) != core.KindBadGateway {
		t.Fatal(err)
	}
	c.CreateAppointmentFunc = create
	if _, err := s.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	calls := c.CreateAppointmentCalls()
	if len(calls) != 2 || calls[0].A.Ref == "" || calls[0].A.Ref != calls[1].A.Ref {
		t.Fatalf("creates %d, refs %q", len(calls), calls[0].A.Ref)
	}
}

func TestBook_RefusalOrUnsentCallReleasesTheHold(t *testing.T) {
	for _, fail := range []*core.Error{
		ErrAgentUnavailable,
		{Kind: core.KindUnavailable, Code: "circuit_open", Message: "open"},
		{Kind: core.KindRateLimited, Code: "rate_limited", Message: "slow down"},
	} {
		t.Run(fail.Code, func(t *testing.T) {
			c := newCalendar(chicago)
			c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) { return Appointment{}, fail }
			s := scheduling(c)
			if _, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); !errors.Is(err, fail) {
				t.Fatal(err)
			}
			if n := s.holds.(*memHolds).count(); n != 0 {
				t.Fatalf("%d holds kept after a call that booked nothing", n)
			}
		})
	}
}

func TestBook_BookedButNotRecordedIsRecordedByTheRepeat(t *testing.T) {
	c := newCalendar(chicago)
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	s := scheduling(c)
	idem := s.idem.(*IdempotencyStoreMock)
	complete := idem.CompleteFunc
	down := errors.New("database gone")
	idem.CompleteFunc = func(context.Context, string, string, Outcome) error { return down }
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "k"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, down) {
		t.Fatalf("first: %v", err)
	}
	if len(idem.ReleaseCalls()) != 0 {
		t.Fatal("the key of a booking the EHR made was released")
	}
	idem.CompleteFunc = complete
	b, err := s.Book(caller("u"), r)
	if err != nil || b.Appointment.ID == "" || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("the repeat: %+v %v, %d creates", b, err, len(c.CreateAppointmentCalls()))
	}
	if ids, _ := s.bookings.BookedBy(context.Background(), "u", ""); len(ids) != 1 {
		t.Fatalf("booked by u: %v", ids)
	}
}
