package ehr

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	c, err := s.access(ctx, core.PermCreate)
	if err != nil {
		return Booked{}, err
	}
	actor, sch := c.Actor, c.sch
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
		return replay(ctx, sch, stored)
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
		return Booked{}, s.complete(ctx, actor.Subject, key, Outcome{Error: &OutcomeError{Kind: ce.Kind, Code: ce.Code, Message: ce.Message}}, nil, err)
	}
	return Booked{Appointment: a}, nil
}

// complete stores an Idempotency-Key's outcome (and, in the same
// transaction, what also writes, when set) and returns answer, the
// request's own result.
func (s *Scheduling) complete(ctx context.Context, subject, key string, out Outcome, also func(context.Context, Repos) error, answer error) error {
	err := s.tx.WithinTx(context.WithoutCancel(ctx), func(ctx context.Context, r Repos) error {
		if err := r.Idempotency.Complete(ctx, subject, key, out); err != nil || also == nil {
			return err
		}
		return also(ctx, r)
	})
	if err != nil {
		return fmt.Errorf("store idempotent outcome: %w", err)
	}
	return answer
}

// isFinal tells the failures a repeat must see again (the client's fault
// or a rule) from those worth retrying (upstream, internal). ErrAgentBusy
// is a conflict of the moment, not a rule: Book releases its key as well.
func isFinal(k core.Kind) bool {
	switch k {
	case core.KindInvalid, core.KindNotFound, core.KindConflict:
		return true
	}
	return false
}

// Outcome is what an Idempotency-Key keeps of its first answer: the
// appointment's id and status (the appointment itself is read again from
// the EHR on a repeat), or the failure. It never holds patient data; the
// IdempotencyStore owns its encoding.
type Outcome struct {
	AppointmentID string
	Status        string
	Error         *OutcomeError // nil: the booking succeeded
}

// OutcomeError is the failure of a first answer, given again on a repeat.
type OutcomeError struct {
	Kind    core.Kind
	Code    string
	Message string
}

// replay answers a repeated Idempotency-Key: the first failure again, or
// the appointment it booked as the EHR has it now.
func replay(ctx context.Context, sch Scheduler, out Outcome) (Booked, error) {
	if out.Error != nil {
		return Booked{Replayed: true}, &core.Error{Kind: out.Error.Kind, Code: out.Error.Code, Message: out.Error.Message}
	}
	if out.AppointmentID == "" {
		return Booked{}, errors.New("stored idempotent outcome is empty")
	}
	a, err := sch.GetAppointment(ctx, out.AppointmentID)
	if err != nil {
		return Booked{}, err
	}
	return Booked{Appointment: a, Replayed: true}, nil
}

// fingerprints identify a booking request, so a key reused for another
// request is told apart: one per fingerprint key, the current key's first.
// Each is an HMAC under the service's key: an unkeyed hash of a patient's
// details could be matched against guesses. The acting business is part of
// the request: a key used at one business is another request at the next.
func (s *Scheduling) fingerprints(subject, business string, r BookingRequest) []string {
	raw, _ := json.Marshal(newFingerprintForm(r)) // a struct of strings and ints always marshals
	fps := make([]string, len(s.fpKeys))
	for i, key := range s.fpKeys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(subject))
		m.Write([]byte{0})
		m.Write(raw)
		if business != "" { // "" keeps the fingerprints made before businesses
			m.Write([]byte{0})
			m.Write([]byte(business))
		}
		fps[i] = hex.EncodeToString(m.Sum(nil))
	}
	return fps
}

// fingerprintForm is what a booking request's fingerprints hash: the JSON
// of the request with its times as the client sent them and no
// Idempotency-Key, the form of the request when its fields were all
// strings. Keys stored before stay matched only while it stays byte for
// byte the same (TestFingerprints_HashedFormIsPinned).
type fingerprintForm struct {
	AgentID         string
	Start           string
	End             string
	DurationMinutes int
	Reason          string
	LocationID      string
	Patient         fingerprintPatient
	IdempotencyKey  string // always ""
}

type fingerprintPatient struct {
	FirstName, LastName, DateOfBirth, Email, Phone string
}

func newFingerprintForm(r BookingRequest) fingerprintForm {
	p := r.Patient
	return fingerprintForm{AgentID: r.AgentID, Start: r.Start.text(), End: r.End.text(), DurationMinutes: r.DurationMinutes,
		Reason: r.Reason, LocationID: r.LocationID,
		Patient: fingerprintPatient{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth, Email: p.Email, Phone: p.Phone}}
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
		Subject: c.Subject, Business: c.business, IdempotencyKey: req.IdempotencyKey}
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
// event and sync's state of it (rememberBooking).
func (s *Scheduling) settle(ctx context.Context, h Hold, a Appointment) error {
	b := Booking{Subject: h.Subject, Business: h.Business, AppointmentID: a.ID, Start: a.Start, HoldID: h.ID}
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
		return s.complete(ctx, h.Subject, h.IdempotencyKey, Outcome{AppointmentID: a.ID, Status: string(a.Status)}, record, nil)
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

// resume answers a repeat of an Idempotency-Key whose first request has no
// outcome yet. When that booking's EHR call ended without an answer (or
// its instance died), the repeat takes its hold over: the appointment the
// EHR holds under the hold's reference is recorded and answered, and when
// there is none it is booked now, under the same reference. Otherwise the
// first request is still running.
func (s *Scheduling) resume(ctx context.Context, c requester, r BookingRequest) (Booked, error) {
	sch := c.sch
	h, found, err := s.holds.Resume(ctx, c.Subject, r.IdempotencyKey, holdLease)
	if err != nil {
		return Booked{}, err
	}
	if found && h.Business != c.business {
		// The key's booking at another business: it stays that
		// business's, settled by the reconciler.
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		found = false
	}
	if !found {
		return Booked{}, ErrIdempotencyInProgress
	}
	a, err := s.appointment(r)
	if err != nil { // the fingerprint matched: not expected
		return Booked{}, err
	}
	booked, ok, err := sch.FindAppointment(ctx, Appointment{Ref: h.ID, AgentID: h.AgentID, Start: h.Start, End: h.End})
	switch {
	case err != nil:
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		return Booked{}, err
	case ok:
		return Booked{Appointment: booked}, s.settle(ctx, h, booked)
	}
	booked, err = s.create(ctx, sch, h, a)
	var ce *core.Error
	if err != nil && errors.As(err, &ce) && isFinal(ce.Kind) && !errors.Is(err, ErrAgentBusy) {
		return Booked{}, s.complete(ctx, h.Subject, h.IdempotencyKey, Outcome{Error: &OutcomeError{Kind: ce.Kind, Code: ce.Code, Message: ce.Message}}, nil, err)
	}
	if err != nil && !errors.Is(err, errOutcomeUnknown) {
		_ = s.idem.Release(context.WithoutCancel(ctx), h.Subject, h.IdempotencyKey)
	}
	return Booked{Appointment: booked}, err
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
