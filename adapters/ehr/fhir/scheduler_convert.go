package fhir

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"

	"github.com/carebridge/carebridge/core/ehr"
)

// How the scheduler's records sit in FHIR R4 resources.
const (
	// TimezoneExtension is the extension on a Practitioner whose valueCode
	// is the IANA time zone of the agent's calendar ("Europe/Madrid"). When
	// the Practitioner has none, the first PractitionerRole that has it
	// gives it; without either, or with a zone that does not load, the
	// agent's zone is UTC.
	TimezoneExtension = "http://hl7.org/fhir/StructureDefinition/timezone"
	// IdentifierSystem is the system of the identifier the scheduler puts
	// on each Appointment it creates: the value is a fresh urn:uuid, and
	// the create is conditional on it (If-None-Exist), so a POST the HTTP
	// client retries after a lost answer books nothing twice.
	IdentifierSystem = "urn:ietf:rfc:3986"
	// containedPatientID is the local id of the Patient contained in an
	// Appointment: the appointment's patient participant refers to
	// "#patient".
	containedPatientID = "patient"
)

// The FHIR R4 wire types of the scheduler, reduced to what it reads and
// writes. Appointments are written with these types when created; updates
// change single elements of the resource as read, so that elements the
// scheduler does not know survive.
type (
	reference struct {
		Reference string `json:"reference,omitempty"`
		Display   string `json:"display,omitempty"`
	}
	meta struct {
		VersionID   string `json:"versionId,omitempty"`
		LastUpdated string `json:"lastUpdated,omitempty"`
	}
	extension struct {
		URL         string `json:"url"`
		ValueCode   string `json:"valueCode,omitempty"`
		ValueString string `json:"valueString,omitempty"`
	}
	// concept is a CodeableConcept that is also written (codeableConcept
	// of the search has no omitempty).
	concept struct {
		Coding []coding `json:"coding,omitempty"`
		Text   string   `json:"text,omitempty"`
	}
	name struct {
		Use    string   `json:"use,omitempty"`
		Text   string   `json:"text,omitempty"`
		Family string   `json:"family,omitempty"`
		Given  []string `json:"given,omitempty"`
	}
	telecom struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value,omitempty"`
	}
	plainIdentifier struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value,omitempty"`
	}

	practitioner struct {
		ResourceType string      `json:"resourceType"`
		ID           string      `json:"id,omitempty"`
		Active       *bool       `json:"active,omitempty"`
		Extension    []extension `json:"extension,omitempty"`
		Name         []name      `json:"name,omitempty"`
		Telecom      []telecom   `json:"telecom,omitempty"`
	}
	practitionerRole struct {
		ResourceType string      `json:"resourceType"`
		ID           string      `json:"id,omitempty"`
		Active       *bool       `json:"active,omitempty"`
		Extension    []extension `json:"extension,omitempty"`
		Practitioner reference   `json:"practitioner"`
		Specialty    []concept   `json:"specialty,omitempty"`
		Location     []reference `json:"location,omitempty"`
	}
	schedule struct {
		ResourceType string      `json:"resourceType"`
		ID           string      `json:"id,omitempty"`
		Active       *bool       `json:"active,omitempty"`
		Actor        []reference `json:"actor"`
	}
	slot struct {
		ResourceType string    `json:"resourceType"`
		ID           string    `json:"id,omitempty"`
		Schedule     reference `json:"schedule"`
		Status       string    `json:"status"`
		Start        string    `json:"start"`
		End          string    `json:"end"`
	}

	appointment struct {
		ResourceType      string            `json:"resourceType"`
		ID                string            `json:"id,omitempty"`
		Meta              *meta             `json:"meta,omitempty"`
		Contained         []json.RawMessage `json:"contained,omitempty"`
		Identifier        []plainIdentifier `json:"identifier,omitempty"`
		Status            string            `json:"status"`
		CancelationReason *concept          `json:"cancelationReason,omitempty"`
		ReasonCode        []concept         `json:"reasonCode,omitempty"`
		Description       string            `json:"description,omitempty"`
		Start             string            `json:"start,omitempty"`
		End               string            `json:"end,omitempty"`
		Created           string            `json:"created,omitempty"`
		Participant       []participant     `json:"participant"`
	}
	participant struct {
		Actor  *reference `json:"actor,omitempty"`
		Status string     `json:"status"`
	}
	// containedPatient is the appointment's patient, contained in it.
	containedPatient struct {
		ResourceType string    `json:"resourceType"`
		ID           string    `json:"id"`
		Name         []name    `json:"name,omitempty"`
		BirthDate    string    `json:"birthDate,omitempty"`
		Telecom      []telecom `json:"telecom,omitempty"`
	}
)

// The FHIR Appointment.status codes and their internal statuses (the
// contract's mapping). toFHIRStatus is the code each internal status is
// written as.
var (
	fromFHIRStatus = map[string]ehr.AppointmentStatus{
		"proposed":         ehr.StatusPending,
		"pending":          ehr.StatusPending,
		"waitlist":         ehr.StatusPending,
		"booked":           ehr.StatusBooked,
		"arrived":          ehr.StatusCheckedIn,
		"checked-in":       ehr.StatusCheckedIn,
		"fulfilled":        ehr.StatusFulfilled,
		"cancelled":        ehr.StatusCancelled,
		"entered-in-error": ehr.StatusCancelled,
		"noshow":           ehr.StatusNoShow,
	}
	toFHIRStatus = map[ehr.AppointmentStatus]string{
		ehr.StatusPending:   "pending",
		ehr.StatusBooked:    "booked",
		ehr.StatusCheckedIn: "checked-in",
		ehr.StatusFulfilled: "fulfilled",
		ehr.StatusCancelled: "cancelled",
		ehr.StatusNoShow:    "noshow",
	}
)

// appointmentStatus maps a FHIR status code to the internal status; an
// unknown code is pending (the safe value: the time stays held, nothing is
// shown as done) and is logged with the appointment's id, never its
// patient.
func appointmentStatus(code, id string, log *slog.Logger) ehr.AppointmentStatus {
	if s, ok := fromFHIRStatus[strings.ToLower(strings.TrimSpace(code))]; ok {
		return s
	}
	log.Warn("fhir: unknown appointment status, treated as pending",
		slog.String("appointment", clipN(id, 64)), slog.String("status", clipN(code, 64)))
	return ehr.StatusPending
}

// fhirStatus is the FHIR code an internal status is written as; an unknown
// one is written as pending (and logged).
func fhirStatus(s ehr.AppointmentStatus, log *slog.Logger) string {
	if code, ok := toFHIRStatus[s]; ok {
		return code
	}
	log.Warn("fhir: unknown internal appointment status, written as pending", slog.String("status", clipN(string(s), 64)))
	return "pending"
}

// fhirStatusCodes lists the FHIR codes that map to s, sorted, for a status
// search (one internal status stands for several codes).
func fhirStatusCodes(s ehr.AppointmentStatus) []string {
	var out []string
	for code, st := range fromFHIRStatus {
		if st == s {
			out = append(out, code)
		}
	}
	slices.Sort(out)
	return out
}

// holdsTime tells whether an appointment of this FHIR status keeps its
// agent busy: all but cancelled, entered-in-error and noshow (an unknown
// code holds the time, as pending does).
func holdsTime(code string) bool {
	switch strings.ToLower(strings.TrimSpace(code)) {
	case "cancelled", "entered-in-error", "noshow":
		return false
	}
	return true
}

// toAppointment converts a FHIR Appointment into the internal record of
// source. The EHR's id is both ID and ExternalID. CreatedAt is
// Appointment.created, else meta.lastUpdated (exact only while the
// appointment has one version); UpdatedAt is meta.lastUpdated; Ref is the
// booking reference of our identifier (see bookingRef). The patient
// is the contained Patient the patient participant refers to (else the
// first contained Patient); an appointment whose patient is a reference to
// a Patient elsewhere gives only the participant's display name.
func toAppointment(ap appointment, source string, log *slog.Logger) ehr.Appointment {
	id := strings.TrimSpace(ap.ID)
	out := ehr.Appointment{
		ID:         id,
		ExternalID: id,
		Source:     source,
		Status:     appointmentStatus(ap.Status, id, log),
		Start:      instant(ap.Start),
		End:        instant(ap.End),
		Reason:     strings.TrimSpace(ap.Description),
	}
	if out.Reason == "" {
		out.Reason = conceptText(ap.ReasonCode)
	}
	var patientRef, patientDisplay string
	for _, p := range ap.Participant {
		if p.Actor == nil {
			continue
		}
		ref := strings.TrimSpace(p.Actor.Reference)
		if typ, rid, ok := splitReference(ref); ok {
			switch typ {
			case "Practitioner":
				if out.AgentID == "" {
					out.AgentID = rid
				}
			case "Location":
				if out.LocationID == "" {
					out.LocationID = rid
				}
			case "Patient":
				if patientDisplay == "" {
					patientDisplay = p.Actor.Display
				}
			}
		} else if strings.HasPrefix(ref, "#") && patientRef == "" {
			patientRef = ref[1:]
		}
	}
	if cp, ok := findContainedPatient(ap.Contained, patientRef); ok {
		out.Patient = toPatientContact(cp)
	} else if words := strings.Fields(patientDisplay); len(words) > 0 {
		out.Patient.LastName = words[len(words)-1]
		out.Patient.FirstName = strings.Join(words[:len(words)-1], " ")
	}
	out.Ref = bookingRef(ap.Identifier)
	if ap.Meta != nil {
		out.UpdatedAt = instant(ap.Meta.LastUpdated)
	}
	out.CreatedAt = instant(ap.Created)
	if out.CreatedAt.IsZero() {
		out.CreatedAt = out.UpdatedAt
	}
	return out
}

// bookingRef is the booking reference of the identifier of
// IdentifierSystem that CreateAppointment puts on an Appointment
// ("urn:uuid:<ref>"); "" when it has none.
func bookingRef(ids []plainIdentifier) string {
	for _, id := range ids {
		if strings.TrimSpace(id.System) != IdentifierSystem {
			continue
		}
		if ref, ok := strings.CutPrefix(strings.TrimSpace(id.Value), "urn:uuid:"); ok && ref != "" {
			return ref
		}
	}
	return ""
}

// findContainedPatient returns the contained Patient with local id ref
// (any contained Patient when ref is "" or not found).
func findContainedPatient(contained []json.RawMessage, ref string) (containedPatient, bool) {
	var first *containedPatient
	for _, raw := range contained {
		var p containedPatient
		if json.Unmarshal(raw, &p) != nil || p.ResourceType != "Patient" {
			continue
		}
		if ref != "" && p.ID == ref {
			return p, true
		}
		if first == nil {
			first = &p
		}
	}
	if first == nil {
		return containedPatient{}, false
	}
	return *first, true
}

func toPatientContact(p containedPatient) ehr.PatientContact {
	out := ehr.PatientContact{DateOfBirth: ehr.NormalDate(p.BirthDate)}
	if n := pickName(humanNames(p.Name)); n != nil {
		name := ehr.NormalName(toName(*n))
		out.FirstName, out.LastName = strings.Join(name.Given, " "), name.Family
	}
	out.Email = telecomValue(p.Telecom, "email")
	out.Phone = telecomValue(p.Telecom, "phone")
	if out.Phone == "" {
		out.Phone = telecomValue(p.Telecom, "sms")
	}
	return out
}

// fhirAppointment converts an internal appointment into a FHIR
// Appointment: ExternalID (else ID) is its id; the agent and the location
// are participants (Practitioner/…, Location/…), and the patient a
// contained Patient that a third participant refers to as "#patient". The
// reason is the description; CreatedAt is Appointment.created and
// UpdatedAt meta.lastUpdated (which a server sets itself on a write).
func fhirAppointment(a ehr.Appointment, log *slog.Logger) appointment {
	ap := appointment{
		ResourceType: "Appointment",
		ID:           strings.TrimSpace(a.ExternalID),
		Status:       fhirStatus(a.Status, log),
		Description:  a.Reason,
		Start:        formatInstant(a.Start),
		End:          formatInstant(a.End),
		Created:      formatInstant(a.CreatedAt),
		Participant:  []participant{},
	}
	if ap.ID == "" {
		ap.ID = strings.TrimSpace(a.ID)
	}
	if !a.UpdatedAt.IsZero() {
		ap.Meta = &meta{LastUpdated: formatInstant(a.UpdatedAt)}
	}
	if a.AgentID != "" {
		ap.Participant = append(ap.Participant, participant{
			Actor: &reference{Reference: "Practitioner/" + a.AgentID}, Status: "accepted"})
	}
	if a.LocationID != "" {
		ap.Participant = append(ap.Participant, participant{
			Actor: &reference{Reference: "Location/" + a.LocationID}, Status: "accepted"})
	}
	if p := a.Patient; p != (ehr.PatientContact{}) {
		cp := containedPatient{ResourceType: "Patient", ID: containedPatientID, BirthDate: p.DateOfBirth}
		if p.FirstName != "" || p.LastName != "" {
			n := name{Family: p.LastName}
			if p.FirstName != "" {
				n.Given = []string{p.FirstName}
			}
			cp.Name = []name{n}
		}
		if p.Email != "" {
			cp.Telecom = append(cp.Telecom, telecom{System: "email", Value: p.Email})
		}
		if p.Phone != "" {
			cp.Telecom = append(cp.Telecom, telecom{System: "phone", Value: p.Phone})
		}
		raw, _ := json.Marshal(cp) // strings only: always marshals
		ap.Contained = []json.RawMessage{raw}
		ap.Participant = append(ap.Participant, participant{
			Actor: &reference{Reference: "#" + containedPatientID,
				Display: strings.TrimSpace(p.FirstName + " " + p.LastName)},
			Status: "accepted"})
	}
	return ap
}
