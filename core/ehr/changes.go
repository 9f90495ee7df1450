package ehr

import (
	"context"
	"fmt"
	"strings"

	"github.com/carebridge/carebridge/core"
)

// Cancel cancels appointment id, acting for business; a cancelled one is a
// conflict.
func (s *Scheduling) Cancel(ctx context.Context, business, id, reason string) (Appointment, error) {
	c, err := s.mayChange(ctx, business, id)
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
	in, err := s.intend(ctx, a, StatusCancelled, a.Start, a.End, c.business)
	if err != nil {
		return Appointment{}, err
	}
	cancelled, err := sch.CancelAppointment(ctx, id, strings.TrimSpace(reason))
	if err != nil {
		s.withdraw(ctx, in)
		return Appointment{}, err
	}
	return cancelled, s.changed(ctx, core.AppointmentCancelled, in, cancelled, c)
}

// changed notes a move or a cancellation the EHR of c confirmed in the
// booking record and in sync's states, settling its intent in
// (rememberChange), and writes its event. The change is made: when this
// fails the caller is told (an error), since other systems may not hear of
// it (its intent stays, so the poller publishes it once it lapses).
func (s *Scheduling) changed(ctx context.Context, t core.EventType, in intent, a Appointment, c requester) error {
	business := c.business
	err := s.tx.WithinTx(context.WithoutCancel(ctx), func(ctx context.Context, r Repos) error {
		if err := r.Bookings.Changed(ctx, c.system, business, a.ID, a.Start, a.Status == StatusCancelled); err != nil {
			return err
		}
		publish, err := rememberChange(ctx, r, in, a, business)
		if err != nil || !publish {
			return err
		}
		return r.Outbox.Emit(ctx, appointmentEvent(t, a, business))
	})
	if err != nil {
		return fmt.Errorf("write %s event of appointment %s: %w", t, a.ID, err)
	}
	return nil
}

// RescheduleRequest moves an appointment.
type RescheduleRequest struct {
	Business   string // the acting business (Tenancy.Act; "" none)
	ID         string // the appointment's
	Start, End Instant
}

// Reschedule moves appointment r.ID, with the checks of a booking; a
// cancelled one is a conflict. The new time is held while the EHR answers,
// as a booking's is.
func (s *Scheduling) Reschedule(ctx context.Context, r RescheduleRequest) (Appointment, error) {
	c, err := s.mayChange(ctx, r.Business, r.ID)
	if err != nil {
		return Appointment{}, err
	}
	sch := c.sch
	var f fieldErrors
	p := s.period(r.Start, r.End, 0, &f)
	if err := f.err(); err != nil {
		return Appointment{}, err
	}
	a, err := sch.GetAppointment(ctx, r.ID)
	if err != nil {
		return Appointment{}, err
	}
	if a.Status == StatusCancelled {
		return Appointment{}, ErrAlreadyCancelled.WithMessage("Appointment %s is cancelled and cannot be rescheduled", r.ID)
	}
	h := Hold{ID: core.NewUUID(), Kind: HoldMove, AgentID: a.AgentID, Start: p.Start, End: p.End, Subject: c.Subject,
		Business: c.business, System: c.system, AppointmentID: r.ID}
	if err := s.holds.Take(ctx, h, holdLease); err != nil {
		return Appointment{}, err
	}
	defer s.release(ctx, h)
	call, cancel := context.WithTimeout(ctx, callBudget)
	defer cancel()
	if err := s.checkFree(call, sch, a.AgentID, p.Start, p.End, &Period{Start: a.Start, End: a.End}); err != nil {
		return Appointment{}, err
	}
	in, err := s.intend(ctx, a, a.Status, p.Start, p.End, c.business)
	if err != nil {
		return Appointment{}, err
	}
	moved, err := sch.RescheduleAppointment(call, r.ID, p.Start, p.End)
	if err != nil {
		s.withdraw(ctx, in)
		return Appointment{}, err
	}
	return moved, s.changed(ctx, core.AppointmentRescheduled, in, moved, c)
}

// mayChange checks that the caller, acting for business, may cancel or
// reschedule appointment id and returns the caller with the EHR the change goes to: staff any
// appointment of the integration EHR in force; a patient only one it
// booked, in the EHR system its booking recorded (any other id, existing
// or not, is not found for it, before an EHR is asked).
func (s *Scheduling) mayChange(ctx context.Context, business, id string) (requester, error) {
	c, err := s.access(ctx, business, core.PermUpdate)
	if err != nil || c.reach != reachOwn {
		return c, err
	}
	system, mine, err := s.bookings.IsBookedBy(ctx, c.Subject, c.business, id)
	if err != nil {
		return requester{}, fmt.Errorf("read bookings: %w", err)
	}
	if !mine {
		return requester{}, ErrAppointmentNotFound
	}
	if c.sch, err = s.ehrOf(system, c.business); err != nil {
		return requester{}, err
	}
	c.system = system // "" too: the change is noted on that booking
	return c, nil
}
