package ehr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
)

// MaxFutureAppointments is how many future appointments a patient-context
// caller may hold (booked through the service, or being booked).
const MaxFutureAppointments = 20

// BookingRequest is an appointment as a customer asks for it.
type BookingRequest struct {
	Business        string // the acting business (Tenancy.Act; "" none)
	AgentID         string
	Start           Instant
	End             Instant // or DurationMinutes
	DurationMinutes int
	Reason          string
	LocationID      string
	Patient         PatientContact
	IdempotencyKey  string // "" when the client sent none
}

// Booked is the answer to a booking: the appointment, or the first
// answer's failure when an Idempotency-Key repeats one; Replayed tells a
// repeat.
type Booked struct {
	Appointment Appointment
	Replayed    bool
}

// period checks start and end (or a duration) by the contract's time
// rules: start in the future, end after start, 5 minutes to 8 hours.
func (s *Scheduling) period(startAt, endAt Instant, minutes int, f *fieldErrors) Period {
	if startAt.Invalid || !startAt.sent() {
		f.add("start", "must be an RFC 3339 time with an offset, such as 2030-01-02T09:00:00-06:00")
		return Period{}
	}
	start, end := startAt.Time, endAt.Time
	switch {
	case endAt.sent() && minutes != 0:
		f.add("end", "and durationMinutes are exclusive; send one")
		return Period{}
	case endAt.Invalid:
		f.add("end", "must be an RFC 3339 time with an offset")
		return Period{}
	case endAt.sent():
	case minutes != 0:
		end = start.Add(time.Duration(minutes) * time.Minute)
	default:
		f.add("end", "or durationMinutes is required")
		return Period{}
	}
	if !start.After(s.now()) {
		f.add("start", "must be in the future")
	}
	switch d := end.Sub(start); {
	case d <= 0:
		f.add("end", "must be after start")
	case d < MinAppointment:
		f.add("end", "must be at least %d minutes after start", int(MinAppointment.Minutes()))
	case d > MaxAppointment:
		f.add("end", "must be at most %d hours after start", int(MaxAppointment.Hours()))
	}
	return Period{Start: start, End: end}
}

func (s *Scheduling) checkPatient(p PatientContact, f *fieldErrors) PatientContact {
	p = PatientContact{
		FirstName: strings.TrimSpace(p.FirstName), LastName: strings.TrimSpace(p.LastName),
		DateOfBirth: strings.TrimSpace(p.DateOfBirth), Email: strings.TrimSpace(p.Email), Phone: strings.TrimSpace(p.Phone),
	}
	if p.FirstName == "" {
		f.add("patient.firstName", "is required")
	}
	if p.LastName == "" {
		f.add("patient.lastName", "is required")
	}
	if len(p.FirstName) > 100 || len(p.LastName) > 100 {
		f.add("patient", "names must be at most 100 characters")
	}
	if dob, err := time.Parse(time.DateOnly, p.DateOfBirth); err != nil {
		f.add("patient.dateOfBirth", "must be a date YYYY-MM-DD")
	} else if !dob.Before(s.now()) {
		f.add("patient.dateOfBirth", "must be in the past")
	}
	emailOK := p.Email != "" && core.ValidEmail(p.Email)
	phoneOK := p.Phone != "" && core.ValidPhone(p.Phone)
	switch {
	case p.Email == "" && p.Phone == "":
		f.add("patient", "needs a valid email or phone")
	case p.Email != "" && !emailOK:
		f.add("patient.email", "must be a valid e-mail address")
	case p.Phone != "" && !phoneOK:
		f.add("patient.phone", "must be a phone number")
	}
	return p
}

// Book creates an appointment after checking the request, the agent and
// the agent's calendar. With an Idempotency-Key, a repeat returns the
// first answer — the appointment or the failure — and books nothing new.
//
// The booking holds its agent's time (Holds) while the EHR answers, so
// bookings of other agents never wait for it and two of one agent at
// overlapping times give one success. The hold is its record before the
// EHR is called: when the answer is lost (a time-out, a crash), a repeat
// with the same Idempotency-Key, or else the reconciler, finds the
// appointment by the hold's reference. Every booking is recorded with the
// caller's subject (with the Idempotency-Key's outcome, in one
// transaction), so a patient-context caller can later list, cancel and
// move what it booked, from any instance.
func (s *Scheduling) Book(ctx context.Context, r BookingRequest) (Booked, error) {
	c, err := s.access(ctx, r.Business, core.PermCreate)
	if err != nil {
		return Booked{}, err
	}
	actor := c.Actor
	key := r.IdempotencyKey
	if key == "" {
		a, err := s.book(ctx, c, r)
		return Booked{Appointment: a}, err
	}
	if len(key) > 255 || strings.ContainsFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return Booked{}, ErrInvalidIdempotencyKey
	}
	stored, done, err := s.idem.Claim(ctx, actor.Subject, key, s.fingerprints(actor.Subject, c.business, r))
	switch {
	case errors.Is(err, ErrIdempotencyInProgress):
		return s.resume(ctx, c, r)
	case err != nil:
		return Booked{}, err
	case done:
		return s.replay(ctx, c.business, stored)
	}
	a, err := s.book(ctx, c, r)
	if errors.Is(err, ErrIdempotencyInProgress) {
		// The key's claim was stale, but the first request's hold is
		// still there: that booking goes on.
		return s.resume(ctx, c, r)
	}
	var ce *core.Error
	if err != nil && (!errors.As(err, &ce) || !isFinal(ce.Kind) || errors.Is(err, ErrAgentBusy)) {
		if !errors.Is(err, errOutcomeUnknown) {
			// Upstream or internal failures may be retried with the same
			// key. The caller gets err either way; a key that stays
			// claimed expires with the Idempotency-Key retention (cores
			// do not log).
			_ = s.idem.Release(context.WithoutCancel(ctx), actor.Subject, key)
		}
		// A booking whose outcome is unknown keeps its key: a repeat
		// resumes it (resume).
		return Booked{}, err
	}
	if err != nil {
		return Booked{}, s.complete(ctx, actor.Subject, key, Outcome{Error: outcomeError(ce)}, nil, err)
	}
	return Booked{Appointment: a}, nil
}

// appointment checks a booking request and returns the appointment it
// asks for (the agent is not asked yet).
func (s *Scheduling) appointment(r BookingRequest) (Appointment, error) {
	var f fieldErrors
	agentID := strings.TrimSpace(r.AgentID)
	if agentID == "" {
		f.add("agentId", "is required")
	}
	p := s.period(r.Start, r.End, r.DurationMinutes, &f)
	patient := s.checkPatient(r.Patient, &f)
	if len(r.Reason) > maxReasonLen {
		f.add("reason", "must be at most %d characters", maxReasonLen)
	}
	if len(r.LocationID) > 100 {
		f.add("locationId", "must be at most 100 characters")
	}
	if err := f.err(); err != nil {
		return Appointment{}, err
	}
	return Appointment{
		AgentID: agentID, Start: p.Start, End: p.End, Status: StatusBooked,
		Reason: strings.TrimSpace(r.Reason), LocationID: strings.TrimSpace(r.LocationID), Patient: patient,
	}, nil
}

// book checks the request, holds the agent's time, and creates and
// records the appointment.
func (s *Scheduling) book(ctx context.Context, c requester, req BookingRequest) (Appointment, error) {
	a, err := s.appointment(req)
	if err != nil {
		return Appointment{}, err
	}
	sch := c.sch
	if _, err := sch.GetAgent(ctx, a.AgentID); err != nil {
		return Appointment{}, err
	}
	h := Hold{ID: core.NewUUID(), Kind: HoldBook, AgentID: a.AgentID, Start: a.Start, End: a.End,
		Subject: c.Subject, Business: c.business, System: c.system, IdempotencyKey: req.IdempotencyKey}
	if c.reach == reachOwn {
		h.MaxFuture = MaxFutureAppointments
	}
	if err := s.holds.Take(ctx, h, holdLease); err != nil {
		return Appointment{}, err
	}
	return s.create(ctx, sch, h, a)
}

// errOutcomeUnknown marks a booking whose EHR call ended without an
// answer: the appointment may exist. Its hold and Idempotency-Key stay.
var errOutcomeUnknown = errors.New("the EHR did not answer the booking; its outcome is unknown")

// create checks that the agent is free, creates a in the EHR under hold
// h's reference, and records it. A failure that shows nothing was booked
// releases h; any other leaves h to a repeat or the reconciler.
func (s *Scheduling) create(ctx context.Context, sch Scheduler, h Hold, a Appointment) (Appointment, error) {
	call, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	if err := s.checkFree(call, sch, h.AgentID, h.Start, h.End, nil); err != nil {
		s.release(ctx, h)
		return Appointment{}, err
	}
	a.Ref = h.ID
	booked, err := sch.CreateAppointment(call, a)
	if err != nil {
		if !mayHaveBooked(err) {
			s.release(ctx, h)
			return Appointment{}, err
		}
		// Best effort: a hold not marked is due once its lease runs out.
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, s.settleAfter)
		return Appointment{}, errors.Join(err, errOutcomeUnknown)
	}
	if err := s.settle(ctx, h, booked); err != nil {
		// Booked but not recorded: a repeat or the reconciler records it.
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		return Appointment{}, errors.Join(err, errOutcomeUnknown)
	}
	return booked, nil
}

// settle records a booking the EHR confirmed and removes its hold: with its
// Idempotency-Key's outcome when it has one, in one transaction, with its
// event and sync's state of it (rememberBooking). The booking and the
// outcome record the hold's EHR system.
func (s *Scheduling) settle(ctx context.Context, h Hold, a Appointment) error {
	b := Booking{Subject: h.Subject, Business: h.Business, System: h.System, AppointmentID: a.ID, Start: a.Start, HoldID: h.ID}
	e := appointmentEvent(core.AppointmentBooked, a, h.Business)
	record := func(ctx context.Context, r Repos) error {
		recorded, err := r.Bookings.Record(ctx, b)
		if err != nil || !recorded { // a booking recorded again emits nothing
			return err
		}
		if err := rememberBooking(ctx, r, a, h.Business); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, e)
	}
	if h.IdempotencyKey != "" {
		return s.complete(ctx, h.Subject, h.IdempotencyKey, Outcome{System: h.System, AppointmentID: a.ID, Status: string(a.Status)}, record, nil)
	}
	if err := s.tx.WithinTx(context.WithoutCancel(ctx), record); err != nil {
		return fmt.Errorf("record booking %s: %w", a.ID, err)
	}
	return nil
}

// release gives back the time of hold h. Best effort: a hold that stays is
// found not booked by the reconciler once its lease runs out.
func (s *Scheduling) release(ctx context.Context, h Hold) {
	_ = s.holds.Release(context.WithoutCancel(ctx), h.ID)
}

// mayHaveBooked reports whether a failed EHR call may still have made its
// change: anything but the EHR's own refusal, or a call that was never
// sent (rate limit, open breaker, refused credentials).
func mayHaveBooked(err error) bool {
	var ce *core.Error
	if !errors.As(err, &ce) {
		return true
	}
	switch {
	case isFinal(ce.Kind), ce.Kind == core.KindRateLimited, ce.Code == "circuit_open", ce.Code == "ehr_auth_failed":
		return false
	}
	return true
}

// checkFree makes sure the agent is free for all of [start, end); own, when
// set, is the appointment being moved, whose time counts as free.
func (s *Scheduling) checkFree(ctx context.Context, sch Scheduler, agentID string, start, end time.Time, own *Period) error {
	free, err := sch.FreePeriods(ctx, agentID, start, end)
	if err != nil {
		return err
	}
	if own != nil {
		free = append(free, *own)
	}
	if !covers(free, start, end) {
		return ErrAgentUnavailable.WithMessage("The agent is not free from %s to %s", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	return nil
}

// covers reports whether the union of periods covers [start, end).
func covers(periods []Period, start, end time.Time) bool {
	for _, p := range MergePeriods(periods) {
		if !p.Start.After(start) && !p.End.Before(end) {
			return true
		}
	}
	return false
}
