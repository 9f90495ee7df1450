package ehr

import "log/slog"

// Patient data in logs: every type that carries it logs as ids, EHR names
// and counts only, whatever handler formats it. A log line may name a
// record; it never holds a name, a birth date, an identifier, a contact or
// an address. slog resolves a LogValuer only where it is an attribute's
// value (groups and With included), not inside a slice or another struct,
// which a handler formats field by field: so every type that holds patient
// data implements it itself (Appointment, not only PatientContact), and a
// slice of them is logged by its length.

// redacted is what a value that is patient data through and through logs
// as.
var redacted = slog.StringValue("[redacted]")

// LogValue is the patient's id and EHR.
func (p Patient) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", p.ID), slog.String("source", p.Source))
}

// LogValue is the person's id and how many EHR records were merged.
func (p Person) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", p.ID), slog.Int("sources", len(p.Sources)))
}

// LogValue hides the name.
func (HumanName) LogValue() slog.Value { return redacted }

// LogValue hides the identifier (a medical record number, say).
func (Identifier) LogValue() slog.Value { return redacted }

// LogValue hides the phone number or address.
func (ContactPoint) LogValue() slog.Value { return redacted }

// LogValue hides the address.
func (Address) LogValue() slog.Value { return redacted }

// LogValue hides who the appointment is for.
func (PatientContact) LogValue() slog.Value { return redacted }

// LogValue is the appointment's ids and status: not the patient, nor the
// reason.
func (a Appointment) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", a.ID), slog.String("agentId", a.AgentID),
		slog.String("status", string(a.Status)), slog.String("source", a.Source))
}

// LogValue is the search's shape: not its terms, which are names, birth
// dates and identifiers.
func (r SearchRequest) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("searchType", r.SearchType), slog.String("location", r.Location)}
	if r.Page.Page != 0 {
		attrs = append(attrs, slog.Int("page", r.Page.Page))
	}
	if r.Page.Limit != 0 {
		attrs = append(attrs, slog.Int("limit", r.Page.Limit))
	}
	return slog.GroupValue(attrs...)
}

// LogValue is the query's size limit only: its terms are patient data.
func (q PatientQuery) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("max", q.Max))
}

// LogValue of a BookingRequest keeps only the agent: the patient, the
// reason and the times stay out of logs.
func (r BookingRequest) LogValue() slog.Value {
	return slog.GroupValue(slog.String("agentId", r.AgentID))
}
