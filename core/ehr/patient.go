// Package ehr is the EHR core: the search gateway (patient records fanned
// out to the configured EHR systems, merged, cached and rate limited) and,
// later, appointments and agents. It imports only the standard library and
// core; EHR wire formats stay in the adapters.
package ehr

import "time"

// Patient is one patient record as an EHR system holds it, in the internal
// shape every adapter converts to.
type Patient struct {
	ID          string // the EHR's own id
	Source      string // name of the EHR system
	Name        HumanName
	BirthDate   string // YYYY-MM-DD, or "" when unknown
	Gender      string // male, female, other, unknown, or ""
	Identifiers []Identifier
	Telecom     []ContactPoint
	Address     []Address
	LastUpdated time.Time // zero when unknown
}

// HumanName is a person's name.
type HumanName struct {
	Family string
	Given  []string
	Text   string
}

// Identifier is a business identifier of a patient; Type "MR" marks a
// medical record number.
type Identifier struct {
	System string
	Value  string
	Type   string
}

// ContactPoint is a phone number, e-mail address or the like.
type ContactPoint struct {
	System string
	Value  string
	Use    string
}

// Address is a postal address.
type Address struct {
	Line       []string
	City       string
	State      string
	PostalCode string
	Country    string
}

// SourceRef names one EHR record of a merged person.
type SourceRef struct {
	Source    string
	PatientID string
}

// Person is one result of a search: the records of one person from every
// EHR that has them, merged.
type Person struct {
	ID          string // stable for the same person and request
	Sources     []SourceRef
	Name        HumanName
	BirthDate   string
	Gender      string
	Identifiers []Identifier
	Telecom     []ContactPoint
	Address     []Address
	LastUpdated time.Time
}
