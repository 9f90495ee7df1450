package fhirserver

import (
	"encoding/base64"
	"encoding/json"
	"net/url"

	"github.com/carebridge/carebridge/core/ehr"
)

// RecordDating says which element of a record's resource holds its date:
// the contract's date rule picks the first element a resource has.
type RecordDating int

const (
	// DateMain writes the date into the rule's first element, a dateTime
	// (Encounter period.start, Condition onsetDateTime, …).
	DateMain RecordDating = iota
	// DatePeriod writes it into the Period form of the first element where
	// the type has one (Condition onsetPeriod, Observation and
	// DiagnosticReport effectivePeriod, Procedure performedPeriod); else as
	// DateMain.
	DatePeriod
	// DateFallback writes it into the element the rule falls back to and
	// leaves the first out (Condition recordedDate, Observation and
	// DiagnosticReport issued, AllergyIntolerance onsetDateTime,
	// DocumentReference context.period.start); else as DateMain.
	DateFallback
)

// The US Core (6.1) profiles of the clinical types.
const usCore = "http://hl7.org/fhir/us/core/StructureDefinition/us-core-"

// RecordResource writes r as a FHIR R4 resource of r.Type, shaped as its
// US Core profile asks (meta.profile, category, intent, clinical and
// verification statuses, a requester), for r.PatientID: its date in the
// element dated names, r.Status as the status (Condition and
// AllergyIntolerance: the clinicalStatus code), r.Code and r.Text as the
// main code, an Observation's value as valueQuantity (UCUM) or
// valueString, a DocumentReference's attachment (an empty one when r has
// none) with content as its data and an url naming it. r.ID is left out:
// the server assigns one. An unknown type gives nil.
func RecordResource(r ehr.Record, dated RecordDating, content string) map[string]any {
	build, ok := recordBuilders[r.Type]
	if !ok {
		return nil
	}
	res := build(r, dated)
	res["resourceType"] = string(r.Type)
	res["meta"] = map[string]any{"profile": []any{usCore + profiles[r.Type]}}
	if r.Type == ehr.TypeDocumentReference {
		res["content"] = []any{map[string]any{"attachment": attachmentJSON(r.Attachment, content)}}
	}
	return res
}

var profiles = map[ehr.ClinicalType]string{
	ehr.TypeEncounter: "encounter", ehr.TypeCondition: "condition-problems-health-concerns",
	ehr.TypeObservation: "observation-lab", ehr.TypeMedicationRequest: "medicationrequest",
	ehr.TypeAllergyIntolerance: "allergyintolerance", ehr.TypeImmunization: "immunization",
	ehr.TypeProcedure: "procedure", ehr.TypeDocumentReference: "documentreference",
	ehr.TypeDiagnosticReport: "diagnosticreport-lab",
}

var recordBuilders = map[ehr.ClinicalType]func(ehr.Record, RecordDating) map[string]any{
	ehr.TypeEncounter: func(r ehr.Record, _ RecordDating) map[string]any {
		return map[string]any{"status": r.Status, "subject": patientRef(r),
			"class": coding("http://terminology.hl7.org/CodeSystem/v3-ActCode", "AMB", "ambulatory"),
			"type":  []any{concept(r)}, "period": map[string]any{"start": r.Date}}
	},
	ehr.TypeCondition: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"subject": patientRef(r), "code": concept(r),
			"clinicalStatus":     codeOnly("http://terminology.hl7.org/CodeSystem/condition-clinical", r.Status),
			"verificationStatus": codeOnly("http://terminology.hl7.org/CodeSystem/condition-ver-status", "confirmed"),
			"category":           []any{codeOnly("http://terminology.hl7.org/CodeSystem/condition-category", "problem-list-item")}}
		dateInto(res, r.Date, d, "onsetDateTime", "onsetPeriod", "recordedDate")
		return res
	},
	ehr.TypeObservation: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"status": r.Status, "subject": patientRef(r), "code": concept(r),
			"category": []any{codeOnly("http://terminology.hl7.org/CodeSystem/observation-category", "laboratory")}}
		dateInto(res, r.Date, d, "effectiveDateTime", "effectivePeriod", "issued")
		if v := r.Value; v != nil && v.Quantity != nil {
			res["valueQuantity"] = map[string]any{"value": json.Number(v.Quantity.Value), "unit": v.Quantity.Unit,
				"system": "http://unitsofmeasure.org", "code": v.Quantity.Unit}
		} else if v != nil {
			res["valueString"] = v.String
		}
		return res
	},
	ehr.TypeMedicationRequest: func(r ehr.Record, _ RecordDating) map[string]any {
		return map[string]any{"status": r.Status, "intent": "order", "subject": patientRef(r),
			"medicationCodeableConcept": concept(r), "authoredOn": r.Date,
			"requester": map[string]any{"display": "Dr. Ana Lopez"}}
	},
	ehr.TypeAllergyIntolerance: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"patient": patientRef(r), "code": concept(r),
			"clinicalStatus":     codeOnly("http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical", r.Status),
			"verificationStatus": codeOnly("http://terminology.hl7.org/CodeSystem/allergyintolerance-verification", "confirmed")}
		dateInto(res, r.Date, d, "recordedDate", "", "onsetDateTime")
		return res
	},
	ehr.TypeImmunization: func(r ehr.Record, _ RecordDating) map[string]any {
		return map[string]any{"status": r.Status, "patient": patientRef(r), "vaccineCode": concept(r),
			"occurrenceDateTime": r.Date, "primarySource": true}
	},
	ehr.TypeProcedure: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"status": r.Status, "subject": patientRef(r), "code": concept(r)}
		dateInto(res, r.Date, d, "performedDateTime", "performedPeriod", "")
		return res
	},
	ehr.TypeDocumentReference: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"status": r.Status, "subject": patientRef(r), "type": concept(r),
			"category": []any{codeOnly("http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category", "clinical-note")}}
		if d == DateFallback && r.Date != "" {
			res["context"] = map[string]any{"period": map[string]any{"start": r.Date}}
		} else if r.Date != "" {
			res["date"] = r.Date
		}
		return res
	},
	ehr.TypeDiagnosticReport: func(r ehr.Record, d RecordDating) map[string]any {
		res := map[string]any{"status": r.Status, "subject": patientRef(r), "code": concept(r),
			"category": []any{codeOnly("http://terminology.hl7.org/CodeSystem/v2-0074", "LAB")}}
		dateInto(res, r.Date, d, "effectiveDateTime", "effectivePeriod", "issued")
		return res
	},
}

// dateInto writes date into the element of res that d names: main (a
// dateTime), period (a Period's start) or fallback; an element the type
// lacks ("") falls back to main. An empty date is written nowhere.
func dateInto(res map[string]any, date string, d RecordDating, main, period, fallback string) {
	switch {
	case date == "":
	case d == DatePeriod && period != "":
		res[period] = map[string]any{"start": date}
	case d == DateFallback && fallback != "":
		res[fallback] = date
	default:
		res[main] = date
	}
}

func patientRef(r ehr.Record) map[string]any {
	return map[string]any{"reference": "Patient/" + r.PatientID}
}

// concept is r's main code: its coding (when it has a code) and text.
func concept(r ehr.Record) map[string]any {
	cc := map[string]any{}
	if r.Code != (ehr.Coding{}) {
		cc["coding"] = []any{map[string]any{"system": r.Code.System, "code": r.Code.Code, "display": r.Code.Display}}
	}
	if r.Text != "" {
		cc["text"] = r.Text
	}
	return cc
}

func coding(system, code, display string) map[string]any {
	return map[string]any{"system": system, "code": code, "display": display}
}

// codeOnly is a CodeableConcept of one coding of system without display.
func codeOnly(system, code string) map[string]any {
	return map[string]any{"coding": []any{map[string]any{"system": system, "code": code}}}
}

// attachmentJSON is a's attachment with content as its data (base64) and
// an url naming it; a nil a is a plain-text attachment without title.
func attachmentJSON(a *ehr.Attachment, content string) map[string]any {
	out := map[string]any{"contentType": "text/plain"}
	if a != nil {
		out["contentType"] = a.ContentType
		if a.Title != "" {
			out["title"] = a.Title
		}
		if a.Size != nil {
			out["size"] = *a.Size
		}
	}
	if content != "" {
		out["data"] = base64.StdEncoding.EncodeToString([]byte(content))
		out["url"] = "https://documents.example/binary/" + url.PathEscape(content)
	}
	return out
}
