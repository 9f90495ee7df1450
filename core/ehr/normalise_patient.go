package ehr

import (
	"slices"
	"strings"
	"time"
)

// NormalPatient is p as every adapter hands it on, whatever EHR sent it:
// the converters copy the wire fields as they are and leave the rule here.
// Text is trimmed, entries with no value are dropped (identifiers, contact
// points, addresses, name parts), gender is one of male, female, other,
// unknown (else ""), the birth date a (partial) date (else ""), the name's
// text its parts when the EHR sent none, and LastUpdated is in UTC.
func NormalPatient(p Patient) Patient {
	out := Patient{
		ID:          strings.TrimSpace(p.ID),
		Source:      p.Source,
		Name:        NormalName(p.Name),
		BirthDate:   NormalDate(p.BirthDate),
		Gender:      NormalGender(p.Gender),
		LastUpdated: p.LastUpdated.UTC(),
	}
	for _, id := range p.Identifiers {
		if id, ok := normalIdentifier(id); ok {
			out.Identifiers = append(out.Identifiers, id)
		}
	}
	for _, t := range p.Telecom {
		if c, ok := normalContactPoint(t); ok {
			out.Telecom = append(out.Telecom, c)
		}
	}
	for _, a := range p.Address {
		if a, ok := normalAddress(a); ok {
			out.Address = append(out.Address, a)
		}
	}
	return out
}

// NormalTime reads an upstream RFC 3339 time (a record's lastUpdated) in
// UTC; the zero time when s is not one.
func NormalTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// NormalName trims n's parts and drops its empty given names and
// suffixes; runs of white space in its text become one space, and a name
// without text takes its given names and family name as the text (the
// name an agent is shown by, too).
func NormalName(n HumanName) HumanName {
	out := HumanName{
		Family: strings.TrimSpace(n.Family),
		Given:  NonEmpty(n.Given),
		Text:   strings.Join(strings.Fields(n.Text), " "),
		Suffix: NonEmpty(n.Suffix),
	}
	if out.Text == "" {
		out.Text = strings.TrimSpace(strings.Join(append(slices.Clone(out.Given), out.Family), " "))
	}
	return out
}

// normalIdentifier trims id's parts; ok is false when no value is left
// (the identifier is dropped).
func normalIdentifier(id Identifier) (_ Identifier, ok bool) {
	id = Identifier{System: strings.TrimSpace(id.System), Value: strings.TrimSpace(id.Value), Type: strings.TrimSpace(id.Type)}
	return id, id.Value != ""
}

// normalContactPoint trims c's parts; ok is false when no value is left
// (the contact point is dropped).
func normalContactPoint(c ContactPoint) (_ ContactPoint, ok bool) {
	c = ContactPoint{System: strings.TrimSpace(c.System), Value: strings.TrimSpace(c.Value), Use: strings.TrimSpace(c.Use)}
	return c, c.Value != ""
}

// normalAddress trims a's parts and drops its empty lines; ok is false
// when nothing is left (the address is dropped).
func normalAddress(a Address) (_ Address, ok bool) {
	a = Address{
		Line:       NonEmpty(a.Line),
		City:       strings.TrimSpace(a.City),
		State:      strings.TrimSpace(a.State),
		PostalCode: strings.TrimSpace(a.PostalCode),
		Country:    strings.TrimSpace(a.Country),
	}
	return a, len(a.Line) > 0 || a.City != "" || a.State != "" || a.PostalCode != "" || a.Country != ""
}
