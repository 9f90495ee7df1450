package ehr

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reconciled counts what one Reconcile did.
type Reconciled struct {
	Recorded int // found in the EHR: recorded, with their events
	Released int // not in the EHR: their time given back
	Failed   int // the EHR or the database failed: tried again later
}

// reconcileRetry is how long after a failed try a hold is tried again.
const reconcileRetry = time.Minute

// Reconcile settles at most n bookings whose outcome was lost: their EHR
// call ended without an answer, or their instance died while it called.
// Each is looked up in the EHR by the reference the booking put on it:
// found, it is recorded (with its Idempotency-Key's outcome and its
// appointment.booked event) as if nothing had failed; not found, its hold
// and Idempotency-Key are released. A move's hold whose lease ran out is
// released. Every instance may run it: each hold is leased to one.
func (s *Scheduling) Reconcile(ctx context.Context, n int) (Reconciled, error) {
	var done Reconciled
	if _, sch := s.systems.Integration(""); !s.systems.MultiPractice() && sch == nil {
		return done, nil
	}
	holds, err := s.holds.Due(ctx, n, holdLease)
	if err != nil {
		return done, fmt.Errorf("claim due holds: %w", err)
	}
	var errs []error
	for _, h := range holds {
		// The EHR the booking was made in: the hold's system, whichever
		// is the integration EHR now.
		sch, err := s.ehrOf(h.System, h.Business)
		if err != nil {
			done.Failed++
			errs = append(errs, fmt.Errorf("settle hold %s: %w", h.ID, err))
			_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, reconcileRetry)
			continue
		}
		recorded, err := s.reconcile(ctx, sch, h)
		switch {
		case err != nil:
			done.Failed++
			errs = append(errs, err)
			_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, reconcileRetry)
		case recorded:
			done.Recorded++
		default:
			done.Released++
		}
	}
	return done, errors.Join(errs...)
}

// reconcile settles one hold; recorded tells a booking found in the EHR.
func (s *Scheduling) reconcile(ctx context.Context, sch Scheduler, h Hold) (recorded bool, err error) {
	if h.Kind != HoldBook {
		return false, s.holds.Release(ctx, h.ID)
	}
	call, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	a, found, err := sch.FindAppointment(call, Appointment{Ref: h.ID, AgentID: h.AgentID, Start: h.Start, End: h.End})
	if err != nil {
		return false, fmt.Errorf("find booking %s: %w", h.ID, err)
	}
	if found {
		return true, s.settle(ctx, h, a)
	}
	if h.IdempotencyKey != "" {
		if err := s.idem.Release(ctx, h.Subject, h.IdempotencyKey); err != nil {
			return false, err
		}
	}
	return false, s.holds.Release(ctx, h.ID)
}
