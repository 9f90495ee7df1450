package wsbotserver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// actionChanges is the appointment change feed action (see
// WithoutChanges).
const actionChanges = "appointments.changes"

// WithoutChanges makes the bot one of the contract's older bots: it
// answers appointments.changes with unknown_action.
func WithoutChanges() Option { return func(s *Server) { s.noChanges = true } }

// tickLocked is the updatedAt of a change: now to the millisecond, and
// strictly after the change before.
func (s *Server) tickLocked() time.Time {
	at := time.Now().UTC().Truncate(time.Millisecond)
	if !at.After(s.lastChange) {
		at = s.lastChange.Add(time.Millisecond)
	}
	s.lastChange = at
	return at
}

// AddAppointment books a directly, as the EHR's own screens do (not
// through the protocol: no externalId, no check of the agent's time):
// with a's agent, times, reason, location and patient, and its status
// (booked when empty). It returns the appointment's id.
func (s *Server) AddAppointment(a ehr.Appointment) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	now := s.tickLocked()
	status := string(a.Status)
	if status == "" {
		status = "booked"
	}
	ap := &appointment{
		id: fmt.Sprintf("apt-%d", s.seq), agentID: a.AgentID, start: a.Start, end: a.End, status: status,
		reason: a.Reason, locationID: a.LocationID, createdAt: now, updatedAt: now,
		patient: patientContact{FirstName: a.Patient.FirstName, LastName: a.Patient.LastName,
			DateOfBirth: a.Patient.DateOfBirth, Email: a.Patient.Email, Phone: a.Patient.Phone},
	}
	s.appts[ap.id] = ap
	return ap.id
}

// MoveAppointment moves appointment id to [start, end) directly, as the
// EHR's own screens do (no check of the agent's time); false when there is
// no such appointment.
func (s *Server) MoveAppointment(id string, start, end time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.appts[id]
	if ok {
		ap.start, ap.end, ap.updatedAt = start, end, s.tickLocked()
	}
	return ok
}

// StampAppointment sets appointment id's updatedAt to at, as an EHR whose
// clock went wrong (or a bad import) does: a time far in the future, say.
// The bot's own clock is not moved: the changes after it are stamped now,
// as before. False when there is no such appointment.
func (s *Server) StampAppointment(id string, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.appts[id]
	if ok {
		ap.updatedAt = at.UTC()
	}
	return ok
}

func (s *Server) changes(payload json.RawMessage) (any, *protoError) {
	var p struct {
		Since string `json:"since"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	var since time.Time
	if p.Since != "" {
		var err error
		if since, err = time.Parse(time.RFC3339Nano, p.Since); err != nil {
			return nil, fail(CodeInvalid, "since must be an RFC 3339 time")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []appointmentJSON{}
	for _, ap := range s.appts { // map order: no particular order
		if ap.updatedAt.After(since) {
			items = append(items, ap.json())
		}
	}
	return struct {
		Items []appointmentJSON `json:"items"`
	}{items}, nil
}
