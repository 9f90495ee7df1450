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
	"github.com/carebridge/carebridge/core/event"
)

// Booking rules of the contract.
const (
	MinAppointment      = 5 * time.Minute
	MaxAppointment      = 8 * time.Hour
	MaxAvailabilityDays = 31
	DefaultSlotMinutes  = 30
	maxReasonLen        = 1000
)

// Integration holds the appointment and agent use cases over the EHR that
// integration.ehr names.
type Integration struct {
	ehr      Scheduler // nil: none configured
	locks    Locker
	idem     IdempotencyStore
	bookings BookingLog
	events   Events
	fpKey    []byte // keys the Idempotency-Key fingerprints
	now      func() time.Time
}

// NewIntegration returns the use cases; scheduler may be nil when the EHR
// systems file names no integration EHR (every call is then
// ErrNoIntegration). fingerprintKey keys the HMAC that tells one booking
// request from another under the same Idempotency-Key; every instance
// sharing a database must use the same key. Bookings, cancellations and
// moves the EHR confirmed are told as events: a booking's with its record
// (bookings, idem), the others through events.
func NewIntegration(scheduler Scheduler, locks Locker, idem IdempotencyStore, bookings BookingLog, events Events, fingerprintKey []byte) *Integration {
	return &Integration{ehr: scheduler, locks: locks, idem: idem, bookings: bookings, events: events, fpKey: fingerprintKey, now: time.Now}
}

// appointmentEvent is the event of type t about a, as the EHR confirmed it.
func appointmentEvent(t event.Type, a Appointment) event.Event {
	return event.Appointment(t, a.ID, a.AgentID, string(a.Status), a.Start, a.End)
}

// emit writes the event of a change the EHR confirmed. The change is made:
// when the event cannot be written the caller is told (an error), since
// other systems will not hear of it.
func (s *Integration) emit(ctx context.Context, t event.Type, a Appointment) error {
	if err := s.events.Emit(context.WithoutCancel(ctx), appointmentEvent(t, a)); err != nil {
		return fmt.Errorf("write %s event of appointment %s: %w", t, a.ID, err)
	}
	return nil
}

// maxOwnAppointments bounds the appointments a patient-context listing
// reads from the EHR, one by one; a caller with more is answered with an
// error rather than a silently short list.
const maxOwnAppointments = 500

// ErrTooManyAppointments is a patient-context listing over
// maxOwnAppointments.
var ErrTooManyAppointments = &core.Error{Kind: core.KindUnavailable, Code: "too_many_appointments",
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

func (s *Integration) scheduler() (Scheduler, error) {
	if s.ehr == nil {
		return nil, ErrNoIntegration
	}
	return s.ehr, nil
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
// Every booking is recorded with the caller's subject (with the
// Idempotency-Key's outcome, in one transaction), so a patient-context
// caller can later list, cancel and move what it booked, from any instance.
func (s *Integration) Book(ctx context.Context, r BookingRequest) (Booked, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Booked{}, core.ErrUnauthenticated
	}
	if _, err := appointmentReach(actor, core.PermCreate); err != nil {
		return Booked{}, err
	}
	sch, err := s.scheduler()
	if err != nil {
		return Booked{}, err
	}
	if r.IdempotencyKey == "" {
		a, err := s.book(ctx, sch, r)
		if err != nil {
			return Booked{}, err
		}
		b := Booking{Subject: actor.Subject, AppointmentID: a.ID, Event: appointmentEvent(event.AppointmentBooked, a)}
		if err := s.bookings.Record(context.WithoutCancel(ctx), b); err != nil {
			return Booked{}, fmt.Errorf("record booking %s: %w", a.ID, err)
		}
		return Booked{Appointment: a}, nil
	}
	if len(r.IdempotencyKey) > 255 || strings.ContainsFunc(r.IdempotencyKey, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		return Booked{}, ErrInvalidIdempotencyKey
	}
	fp := s.fingerprint(actor.Subject, r)
	stored, done, err := s.idem.Claim(ctx, actor.Subject, r.IdempotencyKey, fp)
	if err != nil {
		return Booked{}, err
	}
	if done {
		return replay(ctx, sch, stored)
	}
	a, err := s.book(ctx, sch, r)
	var ce *core.Error
	if err != nil && (!errors.As(err, &ce) || !isFinal(ce.Kind) || errors.Is(err, ErrAgentBusy)) {
		// Upstream or internal failures may be retried with the same key.
		// The caller gets err either way; a key that stays claimed expires
		// with the Idempotency-Key retention (cores do not log).
		_ = s.idem.Release(context.WithoutCancel(ctx), actor.Subject, r.IdempotencyKey)
		return Booked{}, err
	}
	var out outcome
	var booking *Booking
	if err != nil {
		out.Error = &storedError{Kind: ce.Kind, Code: ce.Code, Message: ce.Message}
	} else {
		out.AppointmentID, out.Status = a.ID, string(a.Status)
		booking = &Booking{Subject: actor.Subject, AppointmentID: a.ID, Event: appointmentEvent(event.AppointmentBooked, a)}
	}
	raw, merr := json.Marshal(out)
	if merr == nil {
		merr = s.idem.Complete(context.WithoutCancel(ctx), actor.Subject, r.IdempotencyKey, raw, booking)
	}
	if merr != nil {
		return Booked{}, fmt.Errorf("store idempotent outcome: %w", merr)
	}
	return Booked{Appointment: a}, err
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

// outcome is what an Idempotency-Key keeps of its first answer: the
// appointment's id and status (the appointment itself is read again from
// the EHR on a repeat), or the failure. It never holds patient data.
type outcome struct {
	AppointmentID string       `json:"appointmentId,omitempty"`
	Status        string       `json:"status,omitempty"`
	Error         *storedError `json:"error,omitempty"`
}

type storedError struct {
	Kind    core.Kind `json:"kind"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
}

// replay answers a repeated Idempotency-Key: the first failure again, or
// the appointment it booked as the EHR has it now.
func replay(ctx context.Context, sch Scheduler, raw []byte) (Booked, error) {
	var out outcome
	if err := json.Unmarshal(raw, &out); err != nil {
		return Booked{}, fmt.Errorf("stored idempotent outcome: %w", err)
	}
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

// fingerprint identifies a booking request, so a key reused for another
// request is told apart. It is an HMAC under the service's key: an
// unkeyed hash of a patient's details could be matched against guesses.
func (s *Integration) fingerprint(subject string, r BookingRequest) string {
	r.IdempotencyKey = ""
	raw, _ := json.Marshal(r) // a struct of strings and ints always marshals
	m := hmac.New(sha256.New, s.fpKey)
	m.Write([]byte(subject))
	m.Write([]byte{0})
	m.Write(raw)
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Integration) book(ctx context.Context, sch Scheduler, r BookingRequest) (Appointment, error) {
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
	if _, err := sch.GetAgent(ctx, agentID); err != nil {
		return Appointment{}, err
	}
	var booked Appointment
	err := s.locks.WithLock(ctx, "agent:"+agentID, func(ctx context.Context) error {
		if err := s.checkFree(ctx, sch, agentID, start, end, nil); err != nil {
			return err
		}
		var err error
		booked, err = sch.CreateAppointment(ctx, Appointment{
			AgentID: agentID, Start: start, End: end, Status: StatusBooked,
			Reason: strings.TrimSpace(r.Reason), LocationID: strings.TrimSpace(r.LocationID), Patient: patient,
		})
		return err
	})
	return booked, err
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
	sch, err := s.mayChange(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
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
	return cancelled, s.emit(ctx, event.AppointmentCancelled, cancelled)
}

// Reschedule moves appointment id, with the checks of a booking; a
// cancelled one is a conflict.
func (s *Integration) Reschedule(ctx context.Context, id, startS, endS string) (Appointment, error) {
	sch, err := s.mayChange(ctx, id)
	if err != nil {
		return Appointment{}, err
	}
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
	var moved Appointment
	err = s.locks.WithLock(ctx, "agent:"+a.AgentID, func(ctx context.Context) error {
		if err := s.checkFree(ctx, sch, a.AgentID, start, end, &Period{Start: a.Start, End: a.End}); err != nil {
			return err
		}
		var err error
		moved, err = sch.RescheduleAppointment(ctx, id, start, end)
		return err
	})
	if err != nil {
		return Appointment{}, err
	}
	return moved, s.emit(ctx, event.AppointmentRescheduled, moved)
}

func (s *Integration) authorized(ctx context.Context) (Scheduler, error) {
	if _, ok := core.ActorFrom(ctx); !ok {
		return nil, core.ErrUnauthenticated
	}
	return s.scheduler()
}

// mayChange checks that the caller may cancel or reschedule appointment
// id: staff any, a patient only one it booked; any other id, existing or
// not, is not found for it (before the EHR is asked).
func (s *Integration) mayChange(ctx context.Context, id string) (Scheduler, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return nil, core.ErrUnauthenticated
	}
	r, err := appointmentReach(actor, core.PermUpdate)
	if err != nil {
		return nil, err
	}
	sch, err := s.scheduler()
	if err != nil {
		return nil, err
	}
	if r == reachOwn {
		mine, err := s.bookings.IsBookedBy(ctx, actor.Subject, id)
		if err != nil {
			return nil, fmt.Errorf("read bookings: %w", err)
		}
		if !mine {
			return nil, ErrAppointmentNotFound
		}
	}
	return sch, nil
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
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Page[Appointment]{}, core.ErrUnauthenticated
	}
	r, err := appointmentReach(actor, core.PermSearch)
	if err != nil {
		return Page[Appointment]{}, err
	}
	sch, err := s.scheduler()
	if err != nil {
		return Page[Appointment]{}, err
	}
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
	if r == reachOwn {
		return s.ownAppointments(ctx, sch, actor.Subject, flt)
	}
	return sch.ListAppointments(ctx, flt)
}

// ownAppointments lists the appointments subject booked, read one by one
// from the EHR (a few at a time), filtered, ordered by start, and paged.
// One the EHR no longer has is left out.
func (s *Integration) ownAppointments(ctx context.Context, sch Scheduler, subject string, flt AppointmentFilter) (Page[Appointment], error) {
	ids, err := s.bookings.BookedBy(ctx, subject)
	if err != nil {
		return Page[Appointment]{}, fmt.Errorf("read bookings: %w", err)
	}
	if len(ids) > maxOwnAppointments {
		return Page[Appointment]{}, ErrTooManyAppointments
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
