package wsbotserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

func (ap *appointment) json() appointmentJSON {
	return appointmentJSON{
		ID: ap.id, AgentID: ap.agentID,
		Start: ap.start.Format(time.RFC3339Nano), End: ap.end.Format(time.RFC3339Nano),
		Status: ap.status, Reason: ap.reason, LocationID: ap.locationID, Patient: ap.patient,
		Source: Source, ExternalID: cmp.Or(ap.externalID, ap.id),
		CreatedAt: ap.createdAt.Format(time.RFC3339Nano), UpdatedAt: ap.updatedAt.Format(time.RFC3339Nano),
	}
}

func parseSpan(start, end string) (time.Time, time.Time, *protoError) {
	st, err1 := time.Parse(time.RFC3339Nano, start)
	en, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil {
		return st, en, fail(CodeInvalid, "start and end must be RFC 3339 times")
	}
	if !en.After(st) {
		return st, en, fail(CodeInvalid, "end must be after start")
	}
	return st, en, nil
}

func (s *Server) create(payload json.RawMessage) (any, *protoError) {
	var p struct {
		AgentID    string         `json:"agentId"`
		Start      string         `json:"start"`
		End        string         `json:"end"`
		Reason     string         `json:"reason"`
		LocationID string         `json:"locationId"`
		Patient    patientContact `json:"patient"`
		ExternalID string         `json:"externalId"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.AgentID == "" {
		return nil, fail(CodeInvalid, "agentId is required")
	}
	start, end, e := parseSpan(p.Start, p.End)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.AgentID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.AgentID)
	}
	if !s.fitsLocked(a, start, end, "") {
		return nil, fail(CodeAgentUnavailable, "the agent is not free then")
	}
	s.seq++
	now := s.tickLocked()
	ap := &appointment{
		id: fmt.Sprintf("apt-%d", s.seq), agentID: p.AgentID, start: start, end: end, status: "booked",
		reason: p.Reason, locationID: p.LocationID, patient: p.Patient, externalID: p.ExternalID, createdAt: now, updatedAt: now,
	}
	s.appts[ap.id] = ap
	return ap.json(), nil
}

func (s *Server) listAppointments(payload json.RawMessage) (any, *protoError) {
	p, page, limit, e := decodeList[appointmentQuery](payload)
	if e != nil {
		return nil, e
	}
	var from, to time.Time
	var err error
	if p.From != "" {
		if from, err = parseInstant(p.From, time.UTC, false); err != nil {
			return nil, fail(CodeInvalid, "from must be a time or a date")
		}
	}
	if p.To != "" {
		if to, err = parseInstant(p.To, time.UTC, true); err != nil {
			return nil, fail(CodeInvalid, "to must be a time or a date")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var matched []*appointment
	for _, ap := range s.appts {
		switch {
		case p.AgentID != "" && ap.agentID != p.AgentID,
			p.Status != "" && ap.status != p.Status,
			!from.IsZero() && ap.start.Before(from),
			!to.IsZero() && !ap.start.Before(to),
			p.PatientEmail != "" && !strings.EqualFold(ap.patient.Email, p.PatientEmail):
			continue
		}
		matched = append(matched, ap)
	}
	slices.SortFunc(matched, func(x, y *appointment) int {
		if c := x.start.Compare(y.start); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	all := make([]appointmentJSON, len(matched))
	for i, ap := range matched {
		all[i] = ap.json()
	}
	return pageOf(all, page, limit), nil
}

// appointmentLocked finds the appointment named by a payload's id.
func (s *Server) appointmentLocked(id string) (*appointment, *protoError) {
	if id == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	ap, ok := s.appts[id]
	if !ok {
		return nil, fail(CodeNotFound, "no appointment %q", id)
	}
	return ap, nil
}

func (s *Server) getAppointment(payload json.RawMessage) (any, *protoError) {
	var p idPayload
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, e := s.appointmentLocked(p.ID)
	if e != nil {
		return nil, e
	}
	return ap.json(), nil
}

func (s *Server) cancel(payload json.RawMessage) (any, *protoError) {
	var p struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, e := s.appointmentLocked(p.ID)
	if e != nil {
		return nil, e
	}
	if ap.status == "cancelled" {
		return nil, fail(CodeConflict, "the appointment is already cancelled")
	}
	ap.status, ap.cancelReason = "cancelled", p.Reason
	ap.updatedAt = s.tickLocked()
	return ap.json(), nil
}

func (s *Server) reschedule(payload json.RawMessage) (any, *protoError) {
	var p struct {
		ID    string `json:"id"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	start, end, spanErr := parseSpan(p.Start, p.End)
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, e := s.appointmentLocked(p.ID)
	if e != nil {
		return nil, e
	}
	if spanErr != nil {
		return nil, spanErr
	}
	if ap.status == "cancelled" {
		return nil, fail(CodeConflict, "the appointment is cancelled")
	}
	a, ok := s.agents[ap.agentID]
	if !ok || !s.fitsLocked(a, start, end, ap.id) {
		return nil, fail(CodeAgentUnavailable, "the agent is not free then")
	}
	ap.start, ap.end = start, end
	ap.updatedAt = s.tickLocked()
	return ap.json(), nil
}

// appointmentQuery is the payload of appointments.list.
type appointmentQuery struct {
	AgentID      string `json:"agentId"`
	Status       string `json:"status"`
	From         string `json:"from"`
	To           string `json:"to"`
	PatientEmail string `json:"patientEmail"`
	paging
}
