package ehr

import (
	"context"
	"slices"
	"time"

	"github.com/carebridge/carebridge/core"
)

// classifyBatch classifies changes against the states remembered of their
// appointments, emits their events (none in a baseline) and remembers the
// new states, through r; it notes those past bound.
//
// The API paths' intents come first (the order of their own
// transactions' locks): the lapsed ones are taken over, and a change that
// matches a pending one is classified against the state the intent asks
// for, so what the API path publishes is not published here too.
func (s *Syncer) classifyBatch(ctx context.Context, r Repos, changes []AppointmentChange, baseline bool, bound time.Time, b *batch) error {
	if err := s.takeOver(ctx, r, b); err != nil {
		return err
	}
	ids := usableIDs(changes)
	pending, err := r.Sync.Pending(ctx, s.cfg.System, ids)
	if err != nil {
		return err
	}
	known, err := r.Sync.Known(ctx, s.cfg.System, ids)
	if err != nil {
		return err
	}
	if known == nil {
		known = map[string]AppointmentState{}
	}
	booked, err := r.Sync.Booked(ctx, s.cfg.System, unknownIDs(ids, known))
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
		b.ahead(c, bound)
		st := s.state(c, k, found, booked[a.ID])
		base, based, err := s.deferTo(ctx, r, pending, a, k, found)
		if err != nil {
			return err
		}
		if !baseline {
			ours := a.Ref != "" || len(booked[a.ID]) > 0
			for _, t := range classify(base, based, ours, a.Status, a.Start, a.End) {
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

// lapsedKeep is how long a lapsed intent is kept for its API path, which
// then publishes nothing.
const lapsedKeep = 24 * time.Hour

// takeOver takes over the API paths' intents that expired: one the poller
// has deferred to (it saw the change in the EHR, and its API path never
// told it) is published here, with origin ehr.
func (s *Syncer) takeOver(ctx context.Context, r Repos, b *batch) error {
	lapsed, err := r.Sync.Lapse(ctx, s.cfg.System, lapsedKeep, s.cfg.Batch)
	if err != nil {
		return err
	}
	for _, p := range lapsed {
		if !p.Deferred {
			continue // the EHR's change, if it made it, is read as its own
		}
		t := core.AppointmentRescheduled
		if p.Status == StatusCancelled {
			t = core.AppointmentCancelled
		}
		e := core.AppointmentEvent(t, core.OriginEHR, p.AppointmentID, p.AgentID, string(p.Status), p.Start, p.End, p.Business)
		if err := r.Outbox.Emit(ctx, e); err != nil {
			return err
		}
		b.events = append(b.events, e)
	}
	return nil
}

// deferTo returns the state to classify appointment a's change against:
// when a pending intent of the API paths matches it (a cancellation, or a
// move to a's times), the state the intent asks for (found), and the
// intent is marked deferred and used up; else the known state k (found).
func (s *Syncer) deferTo(ctx context.Context, r Repos, pending map[string][]PendingChange, a Appointment, k AppointmentState, found bool) (AppointmentState, bool, error) {
	ps := pending[a.ID]
	i := slices.IndexFunc(ps, func(p PendingChange) bool { return matches(p, a) })
	if i < 0 {
		return k, found, nil
	}
	p := ps[i]
	pending[a.ID] = slices.Delete(ps, i, i+1)
	if err := r.Sync.Defer(ctx, s.cfg.System, p.ID); err != nil {
		return k, found, err
	}
	if !found {
		k = AppointmentState{ID: a.ID, AgentID: a.AgentID}
	}
	k.Status, k.Start, k.End = p.Status, p.Start, p.End
	return k, true, nil
}

// matches reports whether a shows the change intent p asks for: cancelled
// for a cancellation, p's times for a move (whatever its status: a status
// changed too is the EHR's own change).
func matches(p PendingChange, a Appointment) bool {
	if p.Status == StatusCancelled {
		return a.Status == StatusCancelled
	}
	return a.Start.Equal(p.Start) && a.End.Equal(p.End)
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
// (found false: unknown) that the booking log has, in this system, under
// the businesses booked.
func (s *Syncer) state(c AppointmentChange, k AppointmentState, found bool, booked []string) AppointmentState {
	a := c.Appointment
	return AppointmentState{ID: a.ID, AgentID: a.AgentID, Version: c.Version, Status: a.Status,
		Start: a.Start, End: a.End, Business: s.business(k, found, booked)}
}

// business is the business the events of an appointment belong to: the one
// remembered with it, else the one the booking log has it under in this
// system (whichever businesses the system serves now), else the system's
// single business, else none.
func (s *Syncer) business(k AppointmentState, found bool, booked []string) string {
	if found && k.Business != "" {
		return k.Business
	}
	if len(booked) > 0 {
		return booked[0]
	}
	if len(s.cfg.Businesses) == 1 {
		return s.cfg.Businesses[0]
	}
	return ""
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

// usableIDs returns the ids of the usable appointments of changes.
func usableIDs(changes []AppointmentChange) []string {
	ids := make([]string, 0, len(changes))
	for _, c := range changes {
		if usable(c.Appointment) {
			ids = append(ids, c.Appointment.ID)
		}
	}
	return ids
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
