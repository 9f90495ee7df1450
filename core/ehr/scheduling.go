package ehr

import (
	"cmp"
	"context"
	"fmt"
	"strings"
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

// Scheduling holds the appointment and agent use cases over the
// integration EHR of the acting business each request names (Tenancy.Act;
// none in a single-practice deployment: integration.ehr).
type Scheduling struct {
	systems     Systems
	holds       Holds
	idem        IdempotencyStore
	bookings    BookingLog
	counter     Counter
	tx          Transactor
	fpKeys      [][]byte // key the Idempotency-Key fingerprints: the first makes them, all match
	keyKey      []byte   // keys the rate-limit counters' names
	rateLimit   int
	settleAfter time.Duration
	now         func() time.Time
}

// SchedulingConfig tunes the appointment use cases.
type SchedulingConfig struct {
	// FingerprintKeys key the HMAC that tells one booking request from
	// another under the same Idempotency-Key: the first makes new
	// fingerprints, and one made under any of them (before a key rotation)
	// still matches; every instance sharing a database must use the same
	// keys.
	FingerprintKeys [][]byte
	// RateLimit is how many appointment calls a patient-context caller may
	// make a minute (0: unlimited).
	RateLimit int
	// KeyKey keys the names of the rate-limit counters, as ehr.Config's
	// keys the search gateway's (nil: unkeyed, tests).
	KeyKey []byte
	// SettleAfter is how long after an EHR call that ended without an
	// answer the reconciler looks for its appointment (0: 30 s): a late
	// answer of the EHR has landed by then.
	SettleAfter time.Duration
}

// NewScheduling returns the use cases over the integration EHR of systems,
// asked once a call; it may be none when the EHR systems file names no
// integration EHR (every call is then ErrNoSchedulingEHR). Bookings hold their
// agent's time in holds while the EHR
// answers and are recorded in bookings (or with their Idempotency-Key's
// outcome in idem), through tx with their events; counter counts
// patient-context calls for the rate limit.
func NewScheduling(systems Systems, holds Holds, idem IdempotencyStore, bookings BookingLog, counter Counter, tx Transactor, cfg SchedulingConfig) *Scheduling {
	return &Scheduling{systems: systems, holds: holds, idem: idem, bookings: bookings, counter: counter, tx: tx,
		fpKeys: cfg.FingerprintKeys, keyKey: cfg.KeyKey, rateLimit: cfg.RateLimit, settleAfter: cmp.Or(cfg.SettleAfter, unknownSettle), now: time.Now}
}

// The leases of booking holds.
const (
	// holdLease is how long an instance may take over the EHR calls of one
	// booking before another takes it to have died; callBudget, the most
	// those calls may take, stays well inside it.
	holdLease  = 2 * time.Minute
	callBudget = 90 * time.Second
	// unknownSettle is the default of SchedulingConfig.SettleAfter.
	unknownSettle = 30 * time.Second
)

// appointmentEvent is the event of type t about a, as the EHR confirmed it.
// The event belongs to business, the acting business of the call.
func appointmentEvent(t core.EventType, a Appointment, business string) core.Event {
	return core.AppointmentEvent(t, core.OriginAPI, a.ID, a.AgentID, string(a.Status), a.Start, a.End, business)
}

// ErrAppointmentRateLimited is a patient-context caller past its
// appointment calls of the minute.
var ErrAppointmentRateLimited = &core.Error{Kind: core.KindRateLimited, Code: "rate_limited", Message: "Too many appointment calls; try again later"}

// limit counts a patient-context caller's appointment call against its
// fixed one-minute window (per acting business); staff are not limited
// here.
func (s *Scheduling) limit(ctx context.Context, subject, business string, r reach) error {
	if r != reachOwn || s.rateLimit <= 0 || s.counter == nil {
		return nil
	}
	return countCall(ctx, s.counter, "rl:appt:v2:"+keyed(s.keyKey, scoped(subject, business)), s.rateLimit, ErrAppointmentRateLimited, "appointment calls")
}

// requester is who calls an appointment use case: the actor, its reach, the
// business it acts for, and the EHR system the call goes to (system, by
// its name, and sch): that business's integration EHR, or the system a
// patient's booking recorded (mayChange).
type requester struct {
	core.Actor
	reach    reach
	business string
	system   string
	sch      Scheduler
}

// access checks the caller's scope for perm, counts a patient-context
// call, and returns the caller with its reach, acting business (business)
// and EHR.
func (s *Scheduling) access(ctx context.Context, business string, perm byte) (requester, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return requester{}, core.ErrUnauthenticated
	}
	r, err := appointmentReach(actor, perm)
	if err != nil {
		return requester{}, err
	}
	c, err := s.scheduler(business)
	if err != nil {
		return requester{}, err
	}
	if err := s.limit(ctx, actor.Subject, c.business, r); err != nil {
		return requester{}, err
	}
	c.Actor, c.reach = actor, r
	return c, nil
}

// scheduler returns the acting business and its integration EHR.
func (s *Scheduling) scheduler(business string) (requester, error) {
	if err := checkActing(s.systems, business); err != nil {
		return requester{}, err
	}
	name, sch := s.systems.Integration(business)
	if sch == nil {
		return requester{}, ErrNoSchedulingEHR
	}
	return requester{business: business, system: name, sch: sch}, nil
}

// ehrOf returns the Scheduler of the EHR system a booking, a hold or an
// Idempotency-Key's outcome recorded, whichever system is the integration
// EHR now: what was booked in a system is read, changed and reconciled
// there. One recorded before they recorded their system ("") is in the
// integration EHR of business in force. A system no longer configured is
// ErrEHRSystemGone: no other EHR is asked, since an appointment of
// another patient may have the same id there.
func (s *Scheduling) ehrOf(system, business string) (Scheduler, error) {
	if system == "" {
		_, sch := s.systems.Integration(business)
		if sch == nil {
			return nil, ErrNoSchedulingEHR
		}
		return sch, nil
	}
	if sch := s.systems.SchedulerOf(system); sch != nil {
		return sch, nil
	}
	return nil, ErrEHRSystemGone.WithMessage("The EHR system %s, which holds this appointment, is no longer configured", system)
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

// authorized returns the integration EHR of business for an authenticated
// caller.
func (s *Scheduling) authorized(ctx context.Context, business string) (Scheduler, error) {
	if _, ok := core.ActorFrom(ctx); !ok {
		return nil, core.ErrUnauthenticated
	}
	c, err := s.scheduler(business)
	return c.sch, err
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
