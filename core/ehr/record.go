package ehr

import (
	"strings"
	"time"
)

// ClinicalType is one of the nine clinical record types a search may ask
// for, named as in FHIR R4 ("Observation"). Clients name it in snake case
// (observation, medication_request): see ParseClinicalType.
type ClinicalType string

// The clinical record types of the contract.
const (
	TypeEncounter          ClinicalType = "Encounter"
	TypeCondition          ClinicalType = "Condition"
	TypeObservation        ClinicalType = "Observation"
	TypeMedicationRequest  ClinicalType = "MedicationRequest"
	TypeAllergyIntolerance ClinicalType = "AllergyIntolerance"
	TypeImmunization       ClinicalType = "Immunization"
	TypeProcedure          ClinicalType = "Procedure"
	TypeDocumentReference  ClinicalType = "DocumentReference"
	TypeDiagnosticReport   ClinicalType = "DiagnosticReport"
)

// ClinicalTypes lists the clinical types in the contract's order.
var ClinicalTypes = []ClinicalType{TypeEncounter, TypeCondition, TypeObservation, TypeMedicationRequest,
	TypeAllergyIntolerance, TypeImmunization, TypeProcedure, TypeDocumentReference, TypeDiagnosticReport}

// Snake is the type as clients name it: medication_request.
func (t ClinicalType) Snake() string {
	var b strings.Builder
	for i, r := range string(t) {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ParseClinicalType finds the clinical type a client named in snake case.
func ParseClinicalType(s string) (ClinicalType, bool) {
	for _, t := range ClinicalTypes {
		if t.Snake() == s {
			return t, true
		}
	}
	return "", false
}

// Coding is a code of a code system: the first coding of a record's main
// code.
type Coding struct {
	System  string
	Code    string
	Display string
}

// Quantity is an Observation's value with its unit; Value is the decimal
// as the EHR wrote it, so no precision is lost on the way.
type Quantity struct {
	Value string
	Unit  string
}

// RecordValue is an Observation's value: a quantity, else a string.
type RecordValue struct {
	Quantity *Quantity
	String   string
}

// Attachment describes a DocumentReference's document — never its content
// or URL. Size is nil when the EHR does not tell it.
type Attachment struct {
	ContentType string
	Title       string
	Size        *int64
}

// Record is one clinical record as an EHR adapter reads it, converted from
// the EHR's own form.
type Record struct {
	Type      ClinicalType
	ID        string // the EHR's id of the record
	PatientID string // the EHR's id of the person it belongs to
	// Date is the record's clinical date as the EHR wrote it (a FHIR date
	// or dateTime: "2024", "2024-03", "2024-03-01" or a time with its
	// offset); "" when the record has none. The contract's rule picks the
	// element per type (Encounter period.start, …).
	Date        string
	Status      string
	Code        Coding
	Text        string
	Value       *RecordValue // Observation only; nil otherwise or when none
	Attachment  *Attachment  // DocumentReference only
	LastUpdated time.Time    // zero when unknown (a bot's records)
}

// RecordQuery asks one EHR for one person's records of one type. From and
// To bound the clinical date by calendar day when set; an adapter may pass
// them to the EHR only where its parameter covers that date, and the core
// applies them again to what comes back in every case.
type RecordQuery struct {
	Type      ClinicalType
	PatientID string
	From, To  Date // zero: unbounded
}
