package ehr

import (
	"context"
	"slices"
	"time"

	"github.com/carebridge/carebridge/core"
)

// classifyBatch classifies changes against the states remembered of their
// appointments, emits their events (none in a baseline) and remembers the
// new states, through r.
func (s *Syncer) classifyBatch(ctx context.Context, r Repos, changes []AppointmentChange, baseline bool, b *batch) error {
	ids := make([]string, 0, len(changes))
	for _, c := range changes {
		if usable(c.Appointment) {
			ids = append(ids, c.Appointment.ID)
		}
	}
	known, err := r.Sync.Known(ctx, s.cfg.System, ids)
	if err != nil {
		return err
	}
	if known == nil {
		known = map[string]AppointmentState{}
	}
	booked, err := r.Sync.Booked(ctx, unknownIDs(ids, known))
	if err != nil {
		return err
	}
	for _, c := range changes {
		b.changes++
		a := c.Appointment
		if !usable(a) {
			b.skipped++
			continue
		}
		k, found := known[a.ID]
		if found && c.Version != "" && c.Version == k.Version {
			b.unchanged++
			continue
		}
		st := s.state(c, k, found, booked[a.ID])
		if !baseline {
			ours := a.Ref != "" || slices.ContainsFunc(booked[a.ID], s.serves)
			for _, t := range classify(k, found, ours, a.Status, a.Start, a.End) {
				e := core.AppointmentEvent(t, core.OriginEHR, a.ID, a.AgentID, string(a.Status), a.Start, a.End, st.Business)
				if err := r.Outbox.Emit(ctx, e); err != nil {
					return err
				}
				b.events = append(b.events, e)
			}
		}
		if err := r.Sync.Remember(ctx, s.cfg.System, st); err != nil {
			return err
		}
		known[a.ID] = st // the same appointment twice in a batch
	}
	return nil
}

// classify returns the events of an appointment's change to status, start
// and end, against its known state k (found false: none):
//
//   - unknown: Carebridge's own booking (ours: its reference is on the
//     appointment, or the booking log has it) publishes nothing here, since
//     the API path publishes it; any other is appointment.booked, or
//     appointment.cancelled when it is already cancelled (booked and
//     cancelled between two polls: a receiver that heard nothing of it may
//     ignore it, one that did hear through another path learns the end);
//   - cancelled now and not before: appointment.cancelled (and nothing
//     else, even if it moved too);
//   - start or end moved: appointment.rescheduled;
//   - another status than before: appointment.status_changed (a cancelled
//     one coming back included); both when it moved and changed status;
//   - same status, start and end: nothing.
func classify(k AppointmentState, found, ours bool, status AppointmentStatus, start, end time.Time) []core.EventType {
	switch {
	case !found && ours:
		return nil
	case !found && status == StatusCancelled:
		return []core.EventType{core.AppointmentCancelled}
	case !found:
		return []core.EventType{core.AppointmentBooked}
	case status == StatusCancelled && k.Status == StatusCancelled:
		return nil
	case status == StatusCancelled:
		return []core.EventType{core.AppointmentCancelled}
	}
	var ts []core.EventType
	if !start.Equal(k.Start) || !end.Equal(k.End) {
		ts = append(ts, core.AppointmentRescheduled)
	}
	if status != k.Status {
		ts = append(ts, core.AppointmentStatusChanged)
	}
	return ts
}

// state is the state to remember of change c of an appointment known as k
// (found false: unknown) that the booking log has under booked.
func (s *Syncer) state(c AppointmentChange, k AppointmentState, found bool, booked []string) AppointmentState {
	a := c.Appointment
	return AppointmentState{ID: a.ID, AgentID: a.AgentID, Version: c.Version, Status: a.Status,
		Start: a.Start, End: a.End, Business: s.business(k, found, booked)}
}

// business is the business the events of an appointment belong to: the one
// remembered with it, else the one the booking log has it under, else the
// system's single business, else none.
func (s *Syncer) business(k AppointmentState, found bool, booked []string) string {
	if found && k.Business != "" {
		return k.Business
	}
	if i := slices.IndexFunc(booked, s.serves); i >= 0 {
		return booked[i]
	}
	if len(s.cfg.Businesses) == 1 {
		return s.cfg.Businesses[0]
	}
	return ""
}

// serves reports whether the system is the integration EHR of business
// (any, when the config does not tell).
func (s *Syncer) serves(business string) bool {
	return s.cfg.Businesses == nil || slices.Contains(s.cfg.Businesses, business)
}

// usable reports whether a has what an event needs: a valid id, an agent,
// a period, a known status and the EHR's time of its change. The feed
// leaves such appointments out; this guards against one that does not.
func usable(a Appointment) bool {
	if _, err := ParseAppointmentID(a.ID); err != nil {
		return false
	}
	return a.AgentID != "" && !a.Start.IsZero() && a.End.After(a.Start) &&
		slices.Contains(AppointmentStatuses, a.Status) && !a.UpdatedAt.IsZero()
}

// unknownIDs returns those of ids that known does not hold.
func unknownIDs(ids []string, known map[string]AppointmentState) []string {
	var out []string
	for _, id := range ids {
		if _, ok := known[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}
