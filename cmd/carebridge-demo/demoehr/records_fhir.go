package demoehr

import (
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The demo's records as FHIR R4 resources, shaped as US Core's profiles
// ask (category, clinical and verification status, …), each dated by the
// element the contract reads: Encounter period.start, Condition
// onsetDateTime (a resolved one only recordedDate), Observation and
// DiagnosticReport effectiveDateTime, MedicationRequest authoredOn,
// AllergyIntolerance recordedDate, Immunization occurrenceDateTime,
// Procedure performedDateTime, DocumentReference date.

// The code systems of categories and statuses.
const (
	hl7CS             = "http://terminology.hl7.org/CodeSystem/"
	usCoreDocCategory = "http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category"
)

// fhirShapes builds each type's resource body (resourceType, subject and
// status are added by fhirRecord).
var fhirShapes = map[ehr.ClinicalType]func(r ehr.Record, e entry, cc map[string]any) map[string]any{
	ehr.TypeEncounter: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		// A finished visit has an end: a period without one is open, which a
		// date search matches on every later day.
		start, _ := time.Parse(time.RFC3339, r.Date) // typeRecords writes RFC 3339
		return map[string]any{"class": coding(hl7CS+"v3-ActCode", "AMB", "ambulatory"), "type": []any{cc},
			"period": map[string]any{"start": r.Date, "end": start.Add(30 * time.Minute).Format(time.RFC3339)}}
	},
	ehr.TypeCondition: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		m := map[string]any{"clinicalStatus": concept(hl7CS+"condition-clinical", r.Status),
			"verificationStatus": concept(hl7CS+"condition-ver-status", "confirmed"),
			"category":           []any{concept(hl7CS+"condition-category", "problem-list-item")},
			"code":               cc, "recordedDate": r.Date}
		if r.Status == "active" { // a resolved one is dated by its recordedDate alone
			m["onsetDateTime"] = r.Date
		}
		return m
	},
	ehr.TypeObservation: func(r ehr.Record, e entry, cc map[string]any) map[string]any {
		m := map[string]any{"category": []any{concept(hl7CS+"observation-category", e.category)},
			"code": cc, "effectiveDateTime": r.Date}
		if e.answer != nil {
			m["valueCodeableConcept"] = codeableConcept(*e.answer)
		} else if q := r.Value.Quantity; q != nil {
			m["valueQuantity"] = map[string]any{"value": json.Number(q.Value), "unit": q.Unit, "system": ucum, "code": q.Unit}
		}
		return m
	},
	ehr.TypeMedicationRequest: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		return map[string]any{"intent": "order", "medicationCodeableConcept": cc, "authoredOn": r.Date}
	},
	ehr.TypeAllergyIntolerance: func(r ehr.Record, e entry, cc map[string]any) map[string]any {
		return map[string]any{"clinicalStatus": concept(hl7CS+"allergyintolerance-clinical", r.Status),
			"verificationStatus": concept(hl7CS+"allergyintolerance-verification", "confirmed"),
			"type":               "allergy", "category": []any{e.category}, "code": cc, "recordedDate": r.Date}
	},
	ehr.TypeImmunization: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		return map[string]any{"vaccineCode": cc, "occurrenceDateTime": r.Date, "primarySource": true}
	},
	ehr.TypeProcedure: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		return map[string]any{"code": cc, "performedDateTime": r.Date}
	},
	ehr.TypeDocumentReference: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		a := r.Attachment
		return map[string]any{"type": cc, "date": r.Date,
			"category": []any{concept(usCoreDocCategory, "clinical-note")},
			"content": []any{map[string]any{"attachment": map[string]any{"contentType": a.ContentType, "title": a.Title,
				"size": *a.Size, "data": base64.StdEncoding.EncodeToString([]byte(noteText(r)))}}}}
	},
	ehr.TypeDiagnosticReport: func(r ehr.Record, _ entry, cc map[string]any) map[string]any {
		return map[string]any{"category": []any{concept(hl7CS+"v2-0074", "LAB")}, "code": cc,
			"effectiveDateTime": r.Date, "issued": r.Date}
	},
}

// fhirRecord is record r (of typeRecords) as a FHIR R4 resource of the
// patient with id patientID.
func fhirRecord(r ehr.Record, patientID string) map[string]any {
	e := entryOf(r)
	m := fhirShapes[r.Type](r, e, codeableConcept(r.Code))
	m["resourceType"] = string(r.Type)
	ref := map[string]any{"reference": "Patient/" + patientID}
	if r.Type == ehr.TypeAllergyIntolerance || r.Type == ehr.TypeImmunization {
		m["patient"] = ref
	} else {
		m["subject"] = ref
	}
	if _, ok := m["clinicalStatus"]; !ok {
		m["status"] = r.Status
	}
	return m
}

// entryOf is the catalogue entry of r's code.
func entryOf(r ehr.Record) entry {
	for _, e := range catalogue[r.Type] {
		if e.Coding == r.Code {
			return e
		}
	}
	return entry{Coding: r.Code}
}

func codeableConcept(c ehr.Coding) map[string]any {
	return map[string]any{"coding": []any{coding(c.System, c.Code, c.Display)}, "text": c.Display}
}

func coding(system, code, display string) map[string]any {
	m := map[string]any{"system": system, "code": code}
	if display != "" {
		m["display"] = display
	}
	return m
}

// concept is a CodeableConcept of one coding without display.
func concept(system, code string) map[string]any {
	return map[string]any{"coding": []any{coding(system, code, "")}}
}
