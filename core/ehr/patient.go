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
	Suffix []string // Jr, Sr, III, MD, …: what the EHR keeps apart (FHIR name.suffix)
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
	// Match tells why the records of a person of several records are one
	// (nil for a person of one record).
	Match *Match
	// PossibleMatches are the other people of the same answer who may be
	// this one (probable, not merged); never nil.
	PossibleMatches []PossibleMatch
}

// Match grades the merge of a person's records.
type Match struct {
	Grade   Grade
	Score   float64  // 0 to 1: how likely the records are one person
	Reasons []string // the agreeing evidence (Reason* names)
}

// PossibleMatch names another person of the same answer who is probably
// the same one, with the evidence.
type PossibleMatch struct {
	PersonID string
	Score    float64
	Reasons  []string
}

// Grade is how a merge was decided.
type Grade string

// The grades of a merge.
const (
	Certain   Grade = "certain"   // the contract's certain rule
	Confirmed Grade = "confirmed" // a member's link (decision same)
)
