package ehr

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Booking rules of the contract.
const (
	MinAppointment      = 5 * time.Minute
	MaxAppointment      = 8 * time.Hour
	MaxAvailabilityDays = 31
	DefaultSlotMinutes  = 30
	maxReasonLen        = 1000
)

// Integration holds the appointment and agent use cases over the
// integration EHR of the acting business (Tenancy.Act; none in a
// single-practice deployment: integration.ehr).
type Integration struct {
	systems     Systems
	holds       Holds
	idem        IdempotencyStore
	bookings    BookingLog
	counter     Counter
	tx          Transactor
	fpKeys      [][]byte // key the Idempotency-Key fingerprints: the first makes them, all match
	rateLimit   int
	settleAfter time.Duration
	now         func() time.Time
}

// IntegrationConfig tunes the appointment use cases.
type IntegrationConfig struct {
	// FingerprintKeys key the HMAC that tells one booking request from
	// another under the same Idempotency-Key: the first makes new
	// fingerprints, and one made under any of them (before a key rotation)
	// still matches; every instance sharing a database must use the same
	// keys.
	FingerprintKeys [][]byte
	// RateLimit is how many appointment calls a patient-context caller may
	// make a minute (0: unlimited).
	RateLimit int
	// SettleAfter is how long after an EHR call that ended without an
	// answer the reconciler looks for its appointment (0: 30 s): a late
	// answer of the EHR has landed by then.
	SettleAfter time.Duration
}

// NewIntegration returns the use cases over the integration EHR of systems,
// asked once a call; it may be none when the EHR systems file names no
// integration EHR (every call is then ErrNoIntegration). Bookings hold their agent's time in holds while the EHR
// answers and are recorded in bookings (or with their Idempotency-Key's
// outcome in idem), through tx with their events; counter counts
// patient-context calls for the rate limit.
func NewIntegration(systems Systems, holds Holds, idem IdempotencyStore, bookings BookingLog, counter Counter, tx Transactor, cfg IntegrationConfig) *Integration {
	return &Integration{systems: systems, holds: holds, idem: idem, bookings: bookings, counter: counter, tx: tx,
		fpKeys: cfg.FingerprintKeys, rateLimit: cfg.RateLimit, settleAfter: cmp.Or(cfg.SettleAfter, unknownSettle), now: time.Now}
}

// The leases of booking holds.
const (
	// holdLease is how long an instance may take over the EHR calls of one
	// booking before another takes it to have died; callBudget, the most
	// those calls may take, stays well inside it.
	holdLease  = 2 * time.Minute
	callBudget = 90 * time.Second
	// unknownSettle is the default of IntegrationConfig.SettleAfter.
	unknownSettle = 30 * time.Second
)

// MaxFutureAppointments is how many future appointments a patient-context
// caller may hold (booked through the service, or being booked).
const MaxFutureAppointments = 20

// appointmentEvent is the event of type t about a, as the EHR confirmed it.
// The event belongs to business, the acting business of the call.
func appointmentEvent(t core.EventType, a Appointment, business string) core.Event {
	return core.AppointmentEvent(t, a.ID, a.AgentID, string(a.Status), a.Start, a.End, business)
}

// ErrAppointmentRateLimited is a patient-context caller past its
// appointment calls of the minute.
var ErrAppointmentRateLimited = &core.Error{Kind: core.KindRateLimited, Code: "rate_limited", Message: "Too many appointment calls; try again later"}

// limit counts a patient-context caller's appointment call against its
// fixed one-minute window (per acting business); staff are not limited
// here.
func (s *Integration) limit(ctx context.Context, subject, business string, r reach) error {
	if r != reachOwn || s.rateLimit <= 0 || s.counter == nil {
		return nil
	}
	n, ttl, err := s.counter.Incr(ctx, "rl:appt:v1:"+digest(scoped(subject, business)), rateWindow)
	if err != nil {
		return fmt.Errorf("rate limit counter: %w", err)
	}
	if n > int64(s.rateLimit) {
		e := ErrAppointmentRateLimited.WithMessage("More than %d appointment calls in a minute; try again in %d s", s.rateLimit, int(ttl.Seconds())+1)
		e.RetryAfter = max(ttl, time.Second)
		return e
	}
	return nil
}

// requester is who calls an appointment use case: the actor, its reach, the
// business it acts for and that business's EHR.
type requester struct {
	core.Actor
	reach    reach
	business string
	sch      Scheduler
}

// access checks the caller's scope for perm, counts a patient-context
// call, and returns the caller with its reach, acting business and EHR.
func (s *Integration) access(ctx context.Context, perm byte) (requester, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return requester{}, core.ErrUnauthenticated
	}
	r, err := appointmentReach(actor, perm)
	if err != nil {
		return requester{}, err
	}
	biz, sch, err := s.scheduler(ctx)
	if err != nil {
		return requester{}, err
	}
	if err := s.limit(ctx, actor.Subject, biz, r); err != nil {
		return requester{}, err
	}
	return requester{Actor: actor, reach: r, business: biz, sch: sch}, nil
}

// maxOwnAppointments bounds the appointments a patient-context listing
// reads from the EHR, one by one; a caller with more is answered with an
// error rather than a silently short list.
const maxOwnAppointments = 500

// ErrTooManyToList is a patient-context listing over maxOwnAppointments.
// Its code is its own: too_many_appointments is the contract's 409 of a
// booking past MaxFutureAppointments (ErrAppointmentLimit).
var ErrTooManyToList = &core.Error{Kind: core.KindUnavailable, Code: "listing_too_large",
	Message: "Too many appointments were booked with this token to list them; use a staff token"}

// BookingRequest is an appointment as a customer asks for it; times are
// RFC 3339 with an offset.
type BookingRequest struct {
	AgentID         string
	Start           string
	End             string // or DurationMinutes
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

// scheduler returns the acting business and its integration EHR.
func (s *Integration) scheduler(ctx context.Context) (string, Scheduler, error) {
	biz, err := business(ctx, s.systems)
	if err != nil {
		return "", nil, err
	}
	sch := s.systems.Scheduler(biz)
	if sch == nil {
		return "", nil, ErrNoIntegration
	}
	return biz, sch, nil
}

// fieldErrors collects field-level validation messages.
type fieldErrors []string

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, field+" "+fmt.Sprintf(format, args...))
}

func (f fieldErrors) err() error {
	if len(f) == 0 {
		return nil
	}
	return ErrInvalidAppointment.WithMessage("Validation failed: %s", strings.Join(f, "; "))
}

// parsePeriod reads start and end (or a duration) and checks the contract's
// time rules: start in the future, end after start, 5 minutes to 8 hours.
func (s *Integration) parsePeriod(startS, endS string, minutes int, f *fieldErrors) (time.Time, time.Time) {
	start, err := time.Parse(time.RFC3339, startS)
	if err != nil {
		f.add("start", "must be an RFC 3339 time with an offset, such as 2030-01-02T09:00:00-06:00")
		return start, start
	}
	var end time.Time
	switch {
	case endS != "" && minutes != 0:
		f.add("end", "and durationMinutes are exclusive; send one")
		return start, start
	case endS != "":
		if end, err = time.Parse(time.RFC3339, endS); err != nil {
			f.add("end", "must be an RFC 3339 time with an offset")
			return start, start
		}
	case minutes != 0:
		end = start.Add(time.Duration(minutes) * time.Minute)
	default:
		f.add("end", "or durationMinutes is required")
		return start, start
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
	return start, end
}

func (s *Integration) checkPatient(p PatientContact, f *fieldErrors) PatientContact {
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
func (s *Integration) Book(ctx context.Context, r BookingRequest) (Booked, error) {
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
func (s *Integration) complete(ctx context.Context, subject, key string, out Outcome, also func(context.Context, Repos) error, answer error) error {
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
func (s *Integration) fingerprints(subject, business string, r BookingRequest) []string {
	r.IdempotencyKey = ""
	raw, _ := json.Marshal(r) // a struct of strings and ints always marshals
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

// appointment checks a booking request and returns the appointment it
// asks for (the agent is not asked yet).
func (s *Integration) appointment(r BookingRequest) (Appointment, error) {
	var f fieldErrors
	agentID := strings.TrimSpace(r.AgentID)
	if agentID == "" {
		f.add("agentId", "is required")
	}
	start, end := s.parsePeriod(r.Start, r.End, r.DurationMinutes, &f)
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
		AgentID: agentID, Start: start, End: end, Status: StatusBooked,
		Reason: strings.TrimSpace(r.Reason), LocationID: strings.TrimSpace(r.LocationID), Patient: patient,
	}, nil
}

// book checks the request, holds the agent's time, and creates and
// records the appointment.
func (s *Integration) book(ctx context.Context, c requester, req BookingRequest) (Appointment, error) {
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
func (s *Integration) create(ctx context.Context, sch Scheduler, h Hold, a Appointment) (Appointment, error) {
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
// event.
func (s *Integration) settle(ctx context.Context, h Hold, a Appointment) error {
	b := Booking{Subject: h.Subject, Business: h.Business, AppointmentID: a.ID, Start: a.Start, HoldID: h.ID}
	e := appointmentEvent(core.AppointmentBooked, a, h.Business)
	record := func(ctx context.Context, r Repos) error {
		recorded, err := r.Bookings.Record(ctx, b)
		if err != nil || !recorded { // a booking recorded again emits nothing
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
func (s *Integration) release(ctx context.Context, h Hold) {
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
func (s *Integration) resume(ctx context.Context, c requester, r BookingRequest) (Booked, error) {
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
func (s *Integration) checkFree(ctx context.Context, sch Scheduler, agentID string, start, end time.Time, own *Period) error {
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

// Cancel cancels appointment id; a cancelled one is a conflict.
func (s *Integration) Cancel(ctx context.Context, id, reason string) (Appointment, error) {
	c, err := s.mayChange(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
	sch := c.sch
	if len(reason) > maxReasonLen {
		return Appointment{}, ErrInvalidAppointment.WithMessage("Validation failed: reason must be at most %d characters", maxReasonLen)
	}
	a, err := sch.GetAppointment(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
	if a.Status == StatusCancelled {
		return Appointment{}, ErrAlreadyCancelled.WithMessage("Appointment %s is already cancelled", id)
	}
	cancelled, err := sch.CancelAppointment(ctx, id, strings.TrimSpace(reason))
	if err != nil {
		return Appointment{}, err
	}
	return cancelled, s.changed(ctx, core.AppointmentCancelled, cancelled, c.business)
}

// changed notes a move or a cancellation the EHR confirmed in the booking
// record and writes its event. The change is made: when this fails the
// caller is told (an error), since other systems will not hear of it.
func (s *Integration) changed(ctx context.Context, t core.EventType, a Appointment, business string) error {
	err := s.tx.WithinTx(context.WithoutCancel(ctx), func(ctx context.Context, r Repos) error {
		if err := r.Bookings.Changed(ctx, business, a.ID, a.Start, a.Status == StatusCancelled); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, appointmentEvent(t, a, business))
	})
	if err != nil {
		return fmt.Errorf("write %s event of appointment %s: %w", t, a.ID, err)
	}
	return nil
}

// Reschedule moves appointment id, with the checks of a booking; a
// cancelled one is a conflict. The new time is held while the EHR answers,
// as a booking's is.
func (s *Integration) Reschedule(ctx context.Context, id, startS, endS string) (Appointment, error) {
	c, err := s.mayChange(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
	sch := c.sch
	var f fieldErrors
	start, end := s.parsePeriod(startS, endS, 0, &f)
	if err := f.err(); err != nil {
		return Appointment{}, err
	}
	a, err := sch.GetAppointment(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
	if a.Status == StatusCancelled {
		return Appointment{}, ErrAlreadyCancelled.WithMessage("Appointment %s is cancelled and cannot be rescheduled", id)
	}
	h := Hold{ID: core.NewUUID(), Kind: HoldMove, AgentID: a.AgentID, Start: start, End: end, Subject: c.Subject, Business: c.business, AppointmentID: id}
	if err := s.holds.Take(ctx, h, holdLease); err != nil {
		return Appointment{}, err
	}
	defer s.release(ctx, h)
	call, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	if err := s.checkFree(call, sch, a.AgentID, start, end, &Period{Start: a.Start, End: a.End}); err != nil {
		return Appointment{}, err
	}
	moved, err := sch.RescheduleAppointment(call, id, start, end)
	if err != nil {
		return Appointment{}, err
	}
	return moved, s.changed(ctx, core.AppointmentRescheduled, moved, c.business)
}

// mayChange checks that the caller may cancel or reschedule appointment
// id: staff any, a patient only one it booked; any other id, existing or
// not, is not found for it (before the EHR is asked).
func (s *Integration) mayChange(ctx context.Context, id string) (requester, error) {
	c, err := s.access(ctx, core.PermUpdate)
	if err != nil {
		return requester{}, err
	}
	if c.reach == reachOwn {
		mine, err := s.bookings.IsBookedBy(ctx, c.Subject, c.business, id)
		if err != nil {
			return requester{}, fmt.Errorf("read bookings: %w", err)
		}
		if !mine {
			return requester{}, ErrAppointmentNotFound
		}
	}
	return c, nil
}

func (s *Integration) authorized(ctx context.Context) (Scheduler, error) {
	if _, ok := core.ActorFrom(ctx); !ok {
		return nil, core.ErrUnauthenticated
	}
	_, sch, err := s.scheduler(ctx)
	return sch, err
}

// paging checks page and limit (defaults 1 and DefaultLimit, page at most
// MaxPage, limit at most MaxLimit).
func paging(page, limit int, f *fieldErrors) (int, int) {
	switch {
	case page == 0:
		page = 1
	case page < 0 || page > MaxPage:
		f.add("page", "must be between 1 and %d", MaxPage)
	}
	switch {
	case limit == 0:
		limit = DefaultLimit
	case limit < 0 || limit > MaxLimit:
		f.add("limit", "must be between 1 and %d", MaxLimit)
	}
	return page, limit
}

// Appointments lists appointments: every one of the EHR for staff, those
// the caller booked for a patient-context caller (the filters apply within
// them).
func (s *Integration) Appointments(ctx context.Context, flt AppointmentFilter) (Page[Appointment], error) {
	c, err := s.access(ctx, core.PermSearch)
	if err != nil {
		return Page[Appointment]{}, err
	}
	sch := c.sch
	var f fieldErrors
	flt.Page, flt.Limit = paging(flt.Page, flt.Limit, &f)
	if flt.Status != "" && !slices.Contains(AppointmentStatuses, flt.Status) {
		f.add("status", "must be one of pending, booked, checked_in, fulfilled, cancelled, no_show")
	}
	if !flt.From.IsZero() && !flt.To.IsZero() && !flt.To.After(flt.From) {
		f.add("to", "must be after from")
	}
	if err := f.err(); err != nil {
		return Page[Appointment]{}, err
	}
	if c.reach == reachOwn {
		return s.ownAppointments(ctx, sch, c.Subject, c.business, flt)
	}
	return sch.ListAppointments(ctx, flt)
}

// ownAppointments lists the appointments subject booked acting for
// business, read one by one from the EHR (a few at a time), filtered,
// ordered by start, and paged. One the EHR no longer has is left out.
func (s *Integration) ownAppointments(ctx context.Context, sch Scheduler, subject, business string, flt AppointmentFilter) (Page[Appointment], error) {
	ids, err := s.bookings.BookedBy(ctx, subject, business)
	if err != nil {
		return Page[Appointment]{}, fmt.Errorf("read bookings: %w", err)
	}
	if len(ids) > maxOwnAppointments {
		return Page[Appointment]{}, ErrTooManyToList
	}
	found := make([]*Appointment, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			a, err := sch.GetAppointment(ctx, id)
			switch {
			case err == nil:
				found[i] = &a
			case !errors.Is(err, ErrAppointmentNotFound):
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return Page[Appointment]{}, err
	}
	var all []Appointment
	for _, a := range found {
		if a != nil && flt.matches(*a) {
			all = append(all, *a)
		}
	}
	slices.SortFunc(all, func(a, b Appointment) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	from := min((flt.Page-1)*flt.Limit, len(all))
	return Page[Appointment]{Items: all[from:min(from+flt.Limit, len(all))], TotalCount: len(all), Page: flt.Page, Limit: flt.Limit}, nil
}

// firstError is the first non-nil error of errs.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// matches applies the listing's filters to one appointment, as the EHR
// adapters do.
func (f AppointmentFilter) matches(a Appointment) bool {
	switch {
	case f.AgentID != "" && a.AgentID != f.AgentID,
		f.Status != "" && a.Status != f.Status,
		!f.From.IsZero() && a.Start.Before(f.From),
		!f.To.IsZero() && !a.Start.Before(f.To),
		f.PatientEmail != "" && !strings.EqualFold(strings.TrimSpace(f.PatientEmail), a.Patient.Email):
		return false
	}
	return true
}

// Agents lists agents.
func (s *Integration) Agents(ctx context.Context, flt AgentFilter) (Page[Agent], error) {
	sch, err := s.authorized(ctx)
	if err != nil {
		return Page[Agent]{}, err
	}
	var f fieldErrors
	flt.Page, flt.Limit = paging(flt.Page, flt.Limit, &f)
	if err := f.err(); err != nil {
		return Page[Agent]{}, err
	}
	return sch.ListAgents(ctx, flt)
}

// Agent returns agent id.
func (s *Integration) Agent(ctx context.Context, id string) (Agent, error) {
	sch, err := s.authorized(ctx)
	if err != nil {
		return Agent{}, err
	}
	return sch.GetAgent(ctx, id)
}

// Availability is an agent's free slots.
type Availability struct {
	AgentID  string
	Timezone string
	Slots    []Period
}

// Availability returns the agent's free slots of duration minutes between
// the dates from and to (YYYY-MM-DD, inclusive, in the agent's time zone;
// at most 31 days). Days are cut at local midnight, so a day that DST
// shortens or lengthens has 23 or 25 hours.
func (s *Integration) Availability(ctx context.Context, agentID, fromS, toS string, minutes int) (Availability, error) {
	sch, err := s.authorized(ctx)
	if err != nil {
		return Availability{}, err
	}
	var f fieldErrors
	from, errFrom := time.Parse(time.DateOnly, fromS)
	to, errTo := time.Parse(time.DateOnly, toS)
	if errFrom != nil {
		f.add("from", "must be a date YYYY-MM-DD")
	}
	if errTo != nil {
		f.add("to", "must be a date YYYY-MM-DD")
	}
	if errFrom == nil && errTo == nil {
		switch days := int(to.Sub(from).Hours()/24) + 1; {
		case days < 1:
			f.add("to", "must not be before from")
		case days > MaxAvailabilityDays:
			f.add("to", "must be at most %d days after from", MaxAvailabilityDays-1)
		}
	}
	if minutes == 0 {
		minutes = DefaultSlotMinutes
	}
	if d := time.Duration(minutes) * time.Minute; d < MinAppointment || d > MaxAppointment {
		f.add("duration", "must be between %d and %d minutes", int(MinAppointment.Minutes()), int(MaxAppointment.Minutes()))
	}
	if err := f.err(); err != nil {
		return Availability{}, err
	}
	agent, err := sch.GetAgent(ctx, agentID)
	if err != nil {
		return Availability{}, err
	}
	loc, err := time.LoadLocation(agent.Timezone)
	if err != nil || agent.Timezone == "" {
		loc = time.UTC
	}
	start := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, loc)
	end := time.Date(to.Year(), to.Month(), to.Day()+1, 0, 0, 0, 0, loc)
	free, err := sch.FreePeriods(ctx, agent.ID, start, end)
	if err != nil {
		return Availability{}, err
	}
	return Availability{AgentID: agent.ID, Timezone: loc.String(), Slots: Slots(free, start, end, time.Duration(minutes)*time.Minute, loc)}, nil
}

// Slots cuts free periods, clipped to [start, end), into slots of length d,
// from the start of each merged free span; slot times are in loc.
func Slots(free []Period, start, end time.Time, d time.Duration, loc *time.Location) []Period {
	slots := []Period{}
	for _, p := range MergePeriods(free) {
		p.Start, p.End = later(p.Start, start), earlier(p.End, end)
		for s := p.Start; !s.Add(d).After(p.End); s = s.Add(d) {
			slots = append(slots, Period{Start: s.In(loc), End: s.Add(d).In(loc)})
		}
	}
	return slots
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
