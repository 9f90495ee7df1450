package wsbot

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// ListAgents asks agents.list.
func (c *Client) ListAgents(ctx context.Context, f ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
	var res wireList[wireAgent]
	err := c.call(ctx, actionListAgents, listAgentsPayload{
		Name: f.Name, Specialty: f.Specialty, LocationID: f.LocationID, Page: f.Page, Limit: f.Limit,
	}, &res)
	if err != nil {
		return ehr.Page[ehr.Agent]{}, err
	}
	pg := ehr.Page[ehr.Agent]{Items: make([]ehr.Agent, 0, len(res.Items)), TotalCount: res.TotalCount,
		Page: orDefault(res.Page, f.Page), Limit: orDefault(res.Limit, f.Limit)}
	for _, w := range res.Items {
		pg.Items = append(pg.Items, agentFromWire(w))
	}
	return pg, nil
}

// GetAgent asks agents.get.
func (c *Client) GetAgent(ctx context.Context, id string) (ehr.Agent, error) {
	if id == "" {
		return ehr.Agent{}, ehr.ErrAgentNotFound
	}
	var w wireAgent
	if err := c.call(ctx, actionGetAgent, idPayload{ID: id}, &w); err != nil {
		return ehr.Agent{}, err
	}
	return agentFromWire(w), nil
}

// FreePeriods asks agents.availability for [from, to) (RFC 3339 instants,
// no duration: the free spans whole) and returns the slots clipped to the
// range, sorted, with touching slots joined. The result is never nil.
func (c *Client) FreePeriods(ctx context.Context, agentID string, from, to time.Time) ([]ehr.Period, error) {
	if agentID == "" {
		return nil, ehr.ErrAgentNotFound
	}
	if !to.After(from) {
		return []ehr.Period{}, nil
	}
	var res wireAvailability
	err := c.call(ctx, actionAvailability, availabilityPayload{AgentID: agentID, From: formatTime(from), To: formatTime(to)}, &res)
	if err != nil {
		return nil, err
	}
	ps, err := freeSpans(res.Slots, from, to)
	if err != nil {
		return nil, c.badAnswer(actionAvailability, err.Error(), err)
	}
	return ps, nil
}

// ListAppointments asks appointments.list.
func (c *Client) ListAppointments(ctx context.Context, f ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
	var res wireList[wireAppointment]
	err := c.call(ctx, actionListAppts, listAppointmentsPayload{
		AgentID: f.AgentID, Status: statusToWire(f.Status), From: formatTime(f.From), To: formatTime(f.To),
		PatientEmail: f.PatientEmail, Page: f.Page, Limit: f.Limit,
	}, &res)
	if err != nil {
		return ehr.Page[ehr.Appointment]{}, err
	}
	pg := ehr.Page[ehr.Appointment]{Items: make([]ehr.Appointment, 0, len(res.Items)), TotalCount: res.TotalCount,
		Page: orDefault(res.Page, f.Page), Limit: orDefault(res.Limit, f.Limit)}
	for _, w := range res.Items {
		a, err := appointmentFromWire(w, c.name, c.log)
		if err != nil {
			return ehr.Page[ehr.Appointment]{}, c.badAnswer(actionListAppts, err.Error(), err)
		}
		pg.Items = append(pg.Items, a)
	}
	return pg, nil
}

// GetAppointment asks appointments.get.
func (c *Client) GetAppointment(ctx context.Context, id string) (ehr.Appointment, error) {
	if id == "" {
		return ehr.Appointment{}, ehr.ErrAppointmentNotFound
	}
	return c.appointment(ctx, actionGetAppointment, idPayload{ID: id})
}

// getAtOnce bounds the appointments.get calls of one GetAppointments in
// flight at once.
const getAtOnce = 8

// GetAppointments asks appointments.get for each of ids (the protocol has
// no search by id), a few at a time, and returns those the bot holds, each
// once.
func (c *Client) GetAppointments(ctx context.Context, ids []string) ([]ehr.Appointment, error) {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	found := make([]*ehr.Appointment, len(ids))
	errs := make([]error, len(ids))
	sem := make(chan struct{}, getAtOnce)
	var wg sync.WaitGroup
	for i, id := range ids {
		if id == "" {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a, err := c.GetAppointment(ctx, id)
			switch {
			case err == nil && a.ID == id:
				found[i] = &a
			case err != nil && !errors.Is(err, ehr.ErrAppointmentNotFound):
				errs[i] = err
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out []ehr.Appointment
	for _, a := range found {
		if a != nil {
			out = append(out, *a)
		}
	}
	return out, nil
}

// CreateAppointment asks appointments.create with a's agent, times,
// reason, location and patient, and its Ref as externalId.
func (c *Client) CreateAppointment(ctx context.Context, a ehr.Appointment) (ehr.Appointment, error) {
	return c.appointment(ctx, actionCreate, createPayload{
		AgentID: a.AgentID, Start: formatTime(a.Start), End: formatTime(a.End),
		Reason: a.Reason, LocationID: a.LocationID, Patient: contactToWire(a.Patient), ExternalID: a.Ref,
	})
}

// maxFindPages bounds the pages FindAppointment reads of one agent's
// appointments at the booking's time.
const maxFindPages = 10

// FindAppointment lists the agent's appointments that start within the
// booking's time (the bot protocol has no search by externalId) and
// answers the one whose externalId is ref.Ref.
func (c *Client) FindAppointment(ctx context.Context, ref ehr.Appointment) (ehr.Appointment, bool, error) {
	if ref.Ref == "" || ref.AgentID == "" {
		return ehr.Appointment{}, false, nil
	}
	f := ehr.AppointmentFilter{AgentID: ref.AgentID, From: ref.Start, To: ref.End, Limit: ehr.MaxLimit}
	for f.Page = 1; f.Page <= maxFindPages; f.Page++ {
		p, err := c.ListAppointments(ctx, f)
		if err != nil {
			return ehr.Appointment{}, false, err
		}
		for _, a := range p.Items {
			if a.ExternalID == ref.Ref {
				return a, true, nil
			}
		}
		if len(p.Items) == 0 || f.Page*f.Limit >= p.TotalCount {
			return ehr.Appointment{}, false, nil
		}
	}
	return ehr.Appointment{}, false, &core.Error{Kind: core.KindBadGateway, Code: "ehr_listing_inexact",
		Message: "the bot holds too many appointments of the agent at the booking's time to find it"}
}

// CancelAppointment asks appointments.cancel.
func (c *Client) CancelAppointment(ctx context.Context, id, reason string) (ehr.Appointment, error) {
	if id == "" {
		return ehr.Appointment{}, ehr.ErrAppointmentNotFound
	}
	return c.appointment(ctx, actionCancel, cancelPayload{ID: id, Reason: reason})
}

// RescheduleAppointment asks appointments.reschedule.
func (c *Client) RescheduleAppointment(ctx context.Context, id string, start, end time.Time) (ehr.Appointment, error) {
	if id == "" {
		return ehr.Appointment{}, ehr.ErrAppointmentNotFound
	}
	return c.appointment(ctx, actionReschedule, reschedulePayload{ID: id, Start: formatTime(start), End: formatTime(end)})
}

// appointment calls an action that answers one appointment.
func (c *Client) appointment(ctx context.Context, action string, payload any) (ehr.Appointment, error) {
	var w wireAppointment
	if err := c.call(ctx, action, payload, &w); err != nil {
		return ehr.Appointment{}, err
	}
	a, err := appointmentFromWire(w, c.name, c.log)
	if err != nil {
		return ehr.Appointment{}, c.badAnswer(action, err.Error(), err)
	}
	return a, nil
}

func orDefault(v, def int) int {
	if v != 0 {
		return v
	}
	return def
}
