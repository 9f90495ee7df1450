package fhir

import (
	"context"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// FreePeriods returns the agent's free time in [from, to): the free Slots
// of the practitioner's active Schedules (Schedule?actor=Practitioner/id),
// merged where they touch or overlap, less every Appointment of the
// practitioner (Appointment?actor=…) that holds its time — all but
// cancelled, entered-in-error and noshow ones, and those the practitioner
// declined — clipped to [from, to). Slots and appointments that began up
// to MaxSlotLength before from count. A practitioner without a schedule
// is never free; one that does not exist is ErrAgentNotFound.
func (s *Scheduler) FreePeriods(ctx context.Context, agentID string, from, to time.Time) ([]ehr.Period, error) {
	if !validID(agentID) {
		return nil, ehr.ErrAgentNotFound
	}
	schedules, err := s.activeSchedules(ctx, agentID)
	if err != nil {
		return nil, err
	}
	if len(schedules) == 0 {
		if err := s.practitionerExists(ctx, agentID); err != nil {
			return nil, err
		}
		return []ehr.Period{}, nil
	}
	if !to.After(from) {
		return []ehr.Period{}, nil
	}
	free, err := s.freeSlots(ctx, schedules, from, to)
	if err != nil {
		return nil, err
	}
	if len(free) == 0 {
		return []ehr.Period{}, nil
	}
	busy, err := s.busyPeriods(ctx, agentID, from, to)
	if err != nil {
		return nil, err
	}
	return ehr.ClipPeriods(subtractPeriods(free, busy), from, to), nil
}

// activeSchedules returns the ids of the active Schedules whose actor is
// Practitioner/agentID, each once, in the server's order.
func (s *Scheduler) activeSchedules(ctx context.Context, agentID string) ([]string, error) {
	var schedules []string
	q := url.Values{"actor": {"Practitioner/" + agentID}, "_count": {strconv.Itoa(MaxPageSize)}}
	_, err := s.c.searchAll(ctx, "Schedule", q, func(e entry) error {
		if e.typ != "Schedule" || !e.matched() {
			return nil
		}
		sc, err := decodeEntry[schedule](s.c, e)
		if err != nil {
			return err
		}
		if (sc.Active == nil || *sc.Active) && validID(sc.ID) && hasReference(sc.Actor, "Practitioner", agentID) &&
			!slices.Contains(schedules, sc.ID) {
			schedules = append(schedules, sc.ID)
		}
		return nil
	})
	return schedules, err
}

// freeSlots returns the free Slots of schedules that overlap [from, to)
// (searched from MaxSlotLength before from), merged.
func (s *Scheduler) freeSlots(ctx context.Context, schedules []string, from, to time.Time) ([]ehr.Period, error) {
	var free []ehr.Period
	for chunk := range slices.Chunk(schedules, refChunk) {
		refs := make([]string, len(chunk))
		for i, id := range chunk {
			refs[i] = "Schedule/" + id
		}
		q := url.Values{
			"schedule": {strings.Join(refs, ",")},
			"start":    {"ge" + searchTime(from.Add(-MaxSlotLength), false), "lt" + searchTime(to, true)},
			"status":   {"free"},
			"_count":   {strconv.Itoa(MaxPageSize)},
		}
		if _, err := s.c.searchAll(ctx, "Slot", q, func(e entry) error {
			if e.typ != "Slot" || !e.matched() {
				return nil
			}
			sl, err := decodeEntry[slot](s.c, e)
			if err != nil {
				return err
			}
			typ, sid, ok := splitReference(sl.Schedule.Reference)
			if sl.Status != "free" || !ok || typ != "Schedule" || !slices.Contains(chunk, sid) {
				return nil
			}
			if p, ok := period(sl.Start, sl.End); ok && p.End.After(from) && p.Start.Before(to) {
				free = append(free, p)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return ehr.MergePeriods(free), nil
}

// busyPeriods returns the time that the Appointments of the practitioner
// agentID hold in [from, to) (searched from MaxSlotLength before from),
// merged.
func (s *Scheduler) busyPeriods(ctx context.Context, agentID string, from, to time.Time) ([]ehr.Period, error) {
	var busy []ehr.Period
	q := url.Values{
		"actor":  {"Practitioner/" + agentID},
		"date":   {"ge" + searchTime(from.Add(-MaxSlotLength), false), "lt" + searchTime(to, true)},
		"_count": {strconv.Itoa(MaxPageSize)},
	}
	if _, err := s.c.searchAll(ctx, "Appointment", q, func(e entry) error {
		if e.typ != "Appointment" || !e.matched() {
			return nil
		}
		ap, err := decodeEntry[appointment](s.c, e)
		if err != nil {
			return err
		}
		if !holdsTime(ap.Status) || !holdsAgent(ap, agentID) {
			return nil
		}
		if p, ok := period(ap.Start, ap.End); ok && p.End.After(from) && p.Start.Before(to) {
			busy = append(busy, p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return ehr.MergePeriods(busy), nil
}

// holdsAgent reports whether the practitioner agentID takes part in ap
// (and did not decline).
func holdsAgent(ap appointment, agentID string) bool {
	for _, p := range ap.Participant {
		if p.Actor == nil || p.Status == "declined" {
			continue
		}
		if typ, id, ok := splitReference(p.Actor.Reference); ok && typ == "Practitioner" && id == agentID {
			return true
		}
	}
	return false
}

func hasReference(refs []reference, typ, id string) bool {
	for _, r := range refs {
		if t, i, ok := splitReference(r.Reference); ok && t == typ && i == id {
			return true
		}
	}
	return false
}

// period reads a start and an end instant; ok when both parse and end is
// after start.
func period(start, end string) (ehr.Period, bool) {
	p := ehr.Period{Start: instant(start), End: instant(end)}
	return p, !p.Start.IsZero() && !p.End.IsZero() && p.End.After(p.Start)
}

// subtractPeriods removes busy from free; both are sorted and merged.
func subtractPeriods(free, busy []ehr.Period) []ehr.Period {
	var out []ehr.Period
	for _, f := range free {
		cur := f
		for _, b := range busy {
			if !b.End.After(cur.Start) {
				continue
			}
			if !b.Start.Before(cur.End) {
				break
			}
			if b.Start.After(cur.Start) {
				out = append(out, ehr.Period{Start: cur.Start, End: b.Start})
			}
			cur.Start = b.End
			if !cur.End.After(cur.Start) {
				break
			}
		}
		if cur.End.After(cur.Start) {
			out = append(out, cur)
		}
	}
	return out
}
