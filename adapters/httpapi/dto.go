package httpapi

import "github.com/carebridge/carebridge/core/ehr"

// The wire shapes of the patient data the API sends and receives (the
// public contract names their fields). The domain types of core/ehr carry
// no JSON tags: these are the only JSON form of them here, so a contract
// change touches this file alone. Converters keep nil slices nil (JSON
// null) and empty ones empty ([]), as the domain values have them.

// nameJSON is a person's name.
type nameJSON struct {
	Family string   `json:"family"`
	Given  []string `json:"given"`
	Text   string   `json:"text"`
}

// identifierJSON is a business identifier (type MR: a medical record
// number).
type identifierJSON struct {
	System string `json:"system"`
	Value  string `json:"value"`
	Type   string `json:"type"`
}

// telecomJSON is a phone number, e-mail address or the like.
type telecomJSON struct {
	System string `json:"system"`
	Value  string `json:"value"`
	Use    string `json:"use"`
}

// addressJSON is a postal address.
type addressJSON struct {
	Line       []string `json:"line"`
	City       string   `json:"city"`
	State      string   `json:"state"`
	PostalCode string   `json:"postalCode"`
	Country    string   `json:"country"`
}

// sourceRefJSON names one EHR record of a merged person.
type sourceRefJSON struct {
	Source    string `json:"source"`
	PatientID string `json:"patientId"`
}

// sourceErrorJSON is the failure of one EHR in a search's metadata.
type sourceErrorJSON struct {
	Source  string `json:"source"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// patientContactJSON is who an appointment is for, in an appointment and
// in a booking request.
type patientContactJSON struct {
	FirstName   string `json:"firstName"`
	LastName    string `json:"lastName"`
	DateOfBirth string `json:"dateOfBirth"` // YYYY-MM-DD
	Email       string `json:"email"`
	Phone       string `json:"phone"`
}

func newName(n ehr.HumanName) nameJSON {
	return nameJSON{Family: n.Family, Given: n.Given, Text: n.Text}
}

func newIdentifier(i ehr.Identifier) identifierJSON {
	return identifierJSON{System: i.System, Value: i.Value, Type: i.Type}
}

func newTelecom(c ehr.ContactPoint) telecomJSON {
	return telecomJSON{System: c.System, Value: c.Value, Use: c.Use}
}

func newAddress(a ehr.Address) addressJSON {
	return addressJSON{Line: a.Line, City: a.City, State: a.State, PostalCode: a.PostalCode, Country: a.Country}
}

func newSourceRef(r ehr.SourceRef) sourceRefJSON {
	return sourceRefJSON{Source: r.Source, PatientID: r.PatientID}
}

func newSourceError(e ehr.SourceError) sourceErrorJSON {
	return sourceErrorJSON{Source: e.Source, Code: e.Code, Message: e.Message}
}

// newSourceErrors converts a search's failures (nil stays nil, and the
// field is left out).
func newSourceErrors(errs []ehr.SourceError) []sourceErrorJSON {
	return convertAll(errs, newSourceError)
}

func newPatientContact(p ehr.PatientContact) patientContactJSON {
	return patientContactJSON{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth, Email: p.Email, Phone: p.Phone}
}

// contact is the patient of a booking request, for the core.
func (p patientContactJSON) contact() ehr.PatientContact {
	return ehr.PatientContact{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth, Email: p.Email, Phone: p.Phone}
}

// convertAll converts every element of in; nil stays nil (JSON null) and
// empty stays empty ([]).
func convertAll[A, B any](in []A, conv func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

// convertEach converts every element of in into a list that is never nil
// (JSON []), for a page of results.
func convertEach[A, B any](in []A, conv func(A) B) []B {
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}
