package ehr

import (
	"context"
	"slices"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Appointments lists appointments: every one of the EHR for staff, those
// the caller booked for a patient-context caller (the filters apply within
// them).
func (s *Scheduling) Appointments(ctx context.Context, flt AppointmentFilter) (Page[Appointment], error) {
	c, err := s.access(ctx, flt.Business, core.PermSearch)
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
	if c.reach == reachOwn {
		return s.ownAppointments(ctx, c, flt)
	}
	return c.sch.ListAppointments(ctx, flt)
}

// Agents lists agents.
func (s *Scheduling) Agents(ctx context.Context, flt AgentFilter) (Page[Agent], error) {
	sch, err := s.authorized(ctx, flt.Business)
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

// Agent returns agent id of the integration EHR of business, the acting
// business.
func (s *Scheduling) Agent(ctx context.Context, business, id string) (Agent, error) {
	sch, err := s.authorized(ctx, business)
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

// AvailabilityRequest asks for an agent's free slots.
type AvailabilityRequest struct {
	Business string // the acting business (Tenancy.Act; "" none)
	AgentID  string
	From, To Date // inclusive, in the agent's time zone
	Minutes  int  // the slots' length; 0: DefaultSlotMinutes
}

// Availability returns the agent's free slots of r.Minutes between the
// dates r.From and r.To (inclusive, in the agent's time zone; at most 31
// days). Days are cut at local midnight, so a day that DST shortens or
// lengthens has 23 or 25 hours.
func (s *Scheduling) Availability(ctx context.Context, r AvailabilityRequest) (Availability, error) {
	sch, err := s.authorized(ctx, r.Business)
	if err != nil {
		return Availability{}, err
	}
	var f fieldErrors
	if !r.From.valid() {
		f.add("from", "must be a date YYYY-MM-DD")
	}
	if !r.To.valid() {
		f.add("to", "must be a date YYYY-MM-DD")
	}
	if r.From.valid() && r.To.valid() {
		switch days := int(r.To.midnight(time.UTC, 0).Sub(r.From.midnight(time.UTC, 0)).Hours()/24) + 1; {
		case days < 1:
			f.add("to", "must not be before from")
		case days > MaxAvailabilityDays:
			f.add("to", "must be at most %d days after from", MaxAvailabilityDays-1)
		}
	}
	if r.Minutes == 0 {
		r.Minutes = DefaultSlotMinutes
	}
	if d := time.Duration(r.Minutes) * time.Minute; d < MinAppointment || d > MaxAppointment {
		f.add("duration", "must be between %d and %d minutes", int(MinAppointment.Minutes()), int(MaxAppointment.Minutes()))
	}
	if err := f.err(); err != nil {
		return Availability{}, err
	}
	agent, err := sch.GetAgent(ctx, r.AgentID)
	if err != nil {
		return Availability{}, err
	}
	loc, err := time.LoadLocation(agent.Timezone)
	if err != nil || agent.Timezone == "" {
		loc = time.UTC
	}
	start, end := r.From.midnight(loc, 0), r.To.midnight(loc, 1)
	free, err := sch.FreePeriods(ctx, agent.ID, start, end)
	if err != nil {
		return Availability{}, err
	}
	return Availability{AgentID: agent.ID, Timezone: loc.String(), Slots: Slots(free, start, end, time.Duration(r.Minutes)*time.Minute, loc)}, nil
}

// Slots cuts free periods, clipped to [start, end), into slots of length d,
// from the start of each merged free span; slot times are in loc.
func Slots(free []Period, start, end time.Time, d time.Duration, loc *time.Location) []Period {
	slots := []Period{}
	for _, p := range ClipPeriods(MergePeriods(free), start, end) {
		for s := p.Start; !s.Add(d).After(p.End); s = s.Add(d) {
			slots = append(slots, Period{Start: s.In(loc), End: s.Add(d).In(loc)})
		}
	}
	return slots
}
