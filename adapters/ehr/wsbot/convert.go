package wsbot

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The protocol's actions.
const (
	actionCreate         = "appointments.create"
	actionListAppts      = "appointments.list"
	actionGetAppointment = "appointments.get"
	actionCancel         = "appointments.cancel"
	actionReschedule     = "appointments.reschedule"
	actionListAgents     = "agents.list"
	actionGetAgent       = "agents.get"
	actionAvailability   = "agents.availability"
)

// The wire shapes of the contract ("the internal JSON shapes"). Times are
// RFC 3339 strings, parsed by the converters so a bad one is reported as a
// bad answer.
type (
	wireAppointment struct {
		ID         string      `json:"id,omitempty"`
		AgentID    string      `json:"agentId"`
		Start      string      `json:"start"`
		End        string      `json:"end"`
		Status     string      `json:"status,omitempty"`
		Reason     string      `json:"reason"`
		LocationID string      `json:"locationId"`
		Patient    wireContact `json:"patient"`
		Source     string      `json:"source,omitempty"`
		ExternalID string      `json:"externalId,omitempty"`
		CreatedAt  string      `json:"createdAt,omitempty"`
		UpdatedAt  string      `json:"updatedAt,omitempty"`
	}
	wireContact struct {
		FirstName   string `json:"firstName"`
		LastName    string `json:"lastName"`
		DateOfBirth string `json:"dateOfBirth"`
		Email       string `json:"email"`
		Phone       string `json:"phone"`
	}
	wireAgent struct {
		ID          string   `json:"id"`
		FirstName   string   `json:"firstName"`
		LastName    string   `json:"lastName"`
		Name        string   `json:"name"`
		Specialty   string   `json:"specialty"`
		Email       string   `json:"email"`
		Timezone    string   `json:"timezone"`
		LocationIDs []string `json:"locationIds"`
	}
	wireSlot struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	wireAvailability struct {
		AgentID  string     `json:"agentId"`
		Timezone string     `json:"timezone"`
		Slots    []wireSlot `json:"slots"`
	}
	wirePatient struct {
		ID          string           `json:"id"`
		Name        wireName         `json:"name"`
		BirthDate   string           `json:"birthDate,omitempty"`
		Gender      string           `json:"gender,omitempty"`
		Identifiers []wireIdentifier `json:"identifiers,omitempty"`
		Telecom     []wireTelecom    `json:"telecom,omitempty"`
		Address     []wireAddress    `json:"address,omitempty"`
		LastUpdated string           `json:"lastUpdated,omitempty"`
	}
	wireName struct {
		Family string   `json:"family,omitempty"`
		Given  []string `json:"given,omitempty"`
		Text   string   `json:"text,omitempty"`
	}
	wireIdentifier struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value"`
		Type   string `json:"type,omitempty"`
	}
	wireTelecom struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value"`
		Use    string `json:"use,omitempty"`
	}
	wireAddress struct {
		Line       []string `json:"line,omitempty"`
		City       string   `json:"city,omitempty"`
		State      string   `json:"state,omitempty"`
		PostalCode string   `json:"postalCode,omitempty"`
		Country    string   `json:"country,omitempty"`
	}
	wireList[T any] struct {
		Items      []T `json:"items"`
		TotalCount int `json:"totalCount"`
		Page       int `json:"page"`
		Limit      int `json:"limit"`
	}
)

// The request payloads.
type (
	idPayload struct {
		ID string `json:"id"`
	}
	createPayload struct {
		AgentID    string      `json:"agentId"`
		Start      string      `json:"start"`
		End        string      `json:"end"`
		Reason     string      `json:"reason"`
		LocationID string      `json:"locationId"`
		Patient    wireContact `json:"patient"`
		// ExternalID is the service's reference of the booking, which the
		// bot keeps as the appointment's externalId.
		ExternalID string `json:"externalId,omitempty"`
	}
	listAppointmentsPayload struct {
		AgentID      string `json:"agentId,omitempty"`
		Status       string `json:"status,omitempty"`
		From         string `json:"from,omitempty"`
		To           string `json:"to,omitempty"`
		PatientEmail string `json:"patientEmail,omitempty"`
		Page         int    `json:"page,omitempty"`
		Limit        int    `json:"limit,omitempty"`
	}
	cancelPayload struct {
		ID     string `json:"id"`
		Reason string `json:"reason,omitempty"`
	}
	reschedulePayload struct {
		ID    string `json:"id"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	listAgentsPayload struct {
		Name       string `json:"name,omitempty"`
		Specialty  string `json:"specialty,omitempty"`
		LocationID string `json:"locationId,omitempty"`
		Page       int    `json:"page,omitempty"`
		Limit      int    `json:"limit,omitempty"`
	}
	availabilityPayload struct {
		AgentID string `json:"agentId"`
		From    string `json:"from"`
		To      string `json:"to"`
	}
	searchPayload struct {
		Query      string `json:"query,omitempty"`
		Birthdate  string `json:"birthdate,omitempty"`
		Gender     string `json:"gender,omitempty"`
		Identifier string `json:"identifier,omitempty"`
		Page       int    `json:"page"`
		Limit      int    `json:"limit"`
	}
)

// formatTime is t in RFC 3339 with its offset (fractions only when there
// are any); "" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339Nano)
}

// parseTime reads an RFC 3339 time; "" is the zero time.
func parseTime(field, s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s %q is not an RFC 3339 time", field, clipN(s, 40))
	}
	return t, nil
}

// statusFromWire reads a wire status (the internal names); false when it
// is not one of them.
func statusFromWire(s string) (ehr.AppointmentStatus, bool) {
	st := ehr.AppointmentStatus(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(ehr.AppointmentStatuses, st) {
		return st, true
	}
	return ehr.StatusPending, false
}

// statusToWire is the wire name of an internal status (the same).
func statusToWire(s ehr.AppointmentStatus) string { return string(s) }

func contactToWire(p ehr.PatientContact) wireContact {
	return wireContact{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth, Email: p.Email, Phone: p.Phone}
}

func contactFromWire(w wireContact) ehr.PatientContact {
	return ehr.PatientContact{FirstName: w.FirstName, LastName: w.LastName, DateOfBirth: w.DateOfBirth, Email: w.Email, Phone: w.Phone}
}

// appointmentToWire is a in the contract's shape.
func appointmentToWire(a ehr.Appointment) wireAppointment {
	return wireAppointment{
		ID:         a.ID,
		AgentID:    a.AgentID,
		Start:      formatTime(a.Start),
		End:        formatTime(a.End),
		Status:     statusToWire(a.Status),
		Reason:     a.Reason,
		LocationID: a.LocationID,
		Patient:    contactToWire(a.Patient),
		Source:     a.Source,
		ExternalID: a.ExternalID,
		CreatedAt:  formatTime(a.CreatedAt),
		UpdatedAt:  formatTime(a.UpdatedAt),
	}
}

// appointmentFromWire converts an appointment of the EHR called source. Its
// ID is the EHR's id (ExternalID too, unless the EHR sends one of its own);
// an unknown status reads as pending (the safe value: neither booked nor
// free) and is logged, without patient data.
func appointmentFromWire(w wireAppointment, source string, log *slog.Logger) (ehr.Appointment, error) {
	a := ehr.Appointment{
		ID:         w.ID,
		AgentID:    w.AgentID,
		Reason:     w.Reason,
		LocationID: w.LocationID,
		Patient:    contactFromWire(w.Patient),
		Source:     source,
		ExternalID: w.ExternalID,
	}
	if a.ExternalID == "" {
		a.ExternalID = w.ID
	}
	st, ok := statusFromWire(w.Status)
	if !ok {
		log.Warn("wsbot read an unknown appointment status as pending",
			"appointment", clipN(w.ID, 64), "status", clipN(w.Status, 40))
	}
	a.Status = st
	var err error
	for _, f := range []struct {
		name string
		in   string
		out  *time.Time
	}{{"start", w.Start, &a.Start}, {"end", w.End, &a.End}, {"createdAt", w.CreatedAt, &a.CreatedAt}, {"updatedAt", w.UpdatedAt, &a.UpdatedAt}} {
		if *f.out, err = parseTime(f.name, f.in); err != nil {
			return ehr.Appointment{}, err
		}
	}
	return a, nil
}

func agentToWire(a ehr.Agent) wireAgent {
	loc := a.LocationIDs
	if loc == nil {
		loc = []string{}
	}
	return wireAgent{ID: a.ID, FirstName: a.FirstName, LastName: a.LastName, Name: a.Name,
		Specialty: a.Specialty, Email: a.Email, Timezone: a.Timezone, LocationIDs: loc}
}

func agentFromWire(w wireAgent) ehr.Agent {
	loc := w.LocationIDs
	if loc == nil {
		loc = []string{}
	}
	a := ehr.Agent{ID: w.ID, FirstName: w.FirstName, LastName: w.LastName, Name: w.Name,
		Specialty: w.Specialty, Email: w.Email, Timezone: w.Timezone, LocationIDs: loc}
	if a.Name == "" {
		a.Name = strings.TrimSpace(a.FirstName + " " + a.LastName)
	}
	return a
}

func periodToWire(p ehr.Period) wireSlot {
	return wireSlot{Start: formatTime(p.Start), End: formatTime(p.End)}
}

func periodFromWire(w wireSlot) (ehr.Period, error) {
	start, err := parseTime("slot start", w.Start)
	if err != nil {
		return ehr.Period{}, err
	}
	end, err := parseTime("slot end", w.End)
	if err != nil {
		return ehr.Period{}, err
	}
	return ehr.Period{Start: start, End: end}, nil
}

// freeSpans turns the slots of an availability answer into the spans in
// [from, to): clipped, sorted, and with overlapping or touching slots
// joined. Empty slots are dropped. The result is never nil.
func freeSpans(slots []wireSlot, from, to time.Time) ([]ehr.Period, error) {
	ps := make([]ehr.Period, 0, len(slots))
	for _, s := range slots {
		p, err := periodFromWire(s)
		if err != nil {
			return nil, err
		}
		if p, ok := p.Clip(from, to); ok {
			ps = append(ps, p)
		}
	}
	return ehr.MergePeriods(ps), nil
}

func patientToWire(p ehr.Patient) wirePatient {
	w := wirePatient{
		ID:          p.ID,
		Name:        wireName{Family: p.Name.Family, Given: p.Name.Given, Text: p.Name.Text},
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		LastUpdated: formatTime(p.LastUpdated),
	}
	for _, id := range p.Identifiers {
		w.Identifiers = append(w.Identifiers, wireIdentifier(id))
	}
	for _, t := range p.Telecom {
		w.Telecom = append(w.Telecom, wireTelecom(t))
	}
	for _, a := range p.Address {
		w.Address = append(w.Address, wireAddress(a))
	}
	return w
}

// patientFromWire converts a patients.search item of the EHR called
// source, normalised by ehr.NormalPatient as every adapter's patients are
// (lastUpdated in UTC, zero when unreadable).
func patientFromWire(w wirePatient, source string) ehr.Patient {
	p := ehr.Patient{
		ID:          w.ID,
		Source:      source,
		BirthDate:   w.BirthDate,
		Gender:      w.Gender,
		Name:        ehr.HumanName{Family: w.Name.Family, Given: w.Name.Given, Text: w.Name.Text},
		LastUpdated: ehr.NormalTime(w.LastUpdated),
	}
	for _, id := range w.Identifiers {
		p.Identifiers = append(p.Identifiers, ehr.Identifier(id))
	}
	for _, t := range w.Telecom {
		p.Telecom = append(p.Telecom, ehr.ContactPoint(t))
	}
	for _, a := range w.Address {
		p.Address = append(p.Address, ehr.Address(a))
	}
	return ehr.NormalPatient(p)
}

// clipN clips upstream text to n bytes for a message.
func clipN(s string, n int) string { return ehr.ClipText(s, n) }
