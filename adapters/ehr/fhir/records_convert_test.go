package fhir

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func sizeOf(n int64) *int64 { return &n }

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UTC()
}

// TestToRecordGolden converts one US Core-shaped example per type
// (testdata/records, synthetic) and checks the whole record.
func TestToRecordGolden(t *testing.T) {
	tests := []struct {
		typ  ehr.ClinicalType
		want ehr.Record
	}{
		{ehr.TypeEncounter, ehr.Record{ID: "example-1", PatientID: "example", Date: "2024-03-12T09:30:00-05:00",
			Status: "finished",
			Code: ehr.Coding{System: "http://www.ama-assn.org/go/cpt", Code: "99213",
				Display: "Office or other outpatient visit for the evaluation and management of an established patient"},
			Text: "Office Visit", LastUpdated: at(t, "2024-03-14T09:02:11.25Z")}},
		{ehr.TypeCondition, ehr.Record{ID: "example-problem", PatientID: "example", Date: "2019-04-23",
			Status: "active",
			Code:   ehr.Coding{System: "http://snomed.info/sct", Code: "44054006", Display: "Diabetes mellitus type 2 (disorder)"},
			Text:   "Type 2 diabetes", LastUpdated: at(t, "2023-11-02T08:15:00Z")}},
		{ehr.TypeObservation, ehr.Record{ID: "hemoglobin-a1c", PatientID: "example", Date: "2024-02-19T08:10:00-05:00",
			Status:      "final",
			Code:        ehr.Coding{System: "http://loinc.org", Code: "4548-4", Display: "Hemoglobin A1c/Hemoglobin.total in Blood"},
			Text:        "Hemoglobin A1c/Hemoglobin.total in Blood",
			Value:       &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "%"}},
			LastUpdated: at(t, "2024-02-20T16:45:03.5Z")}},
		{ehr.TypeMedicationRequest, ehr.Record{ID: "self-tylenol", PatientID: "example", Date: "2023-06-05",
			Status: "active",
			Code: ehr.Coding{System: "http://www.nlm.nih.gov/research/umls/rxnorm", Code: "1049221",
				Display: "acetaminophen 325 MG Oral Tablet"},
			Text: "acetaminophen 325 MG Oral Tablet", LastUpdated: at(t, "2023-06-05T12:00:00Z")}},
		{ehr.TypeAllergyIntolerance, ehr.Record{ID: "example", PatientID: "example", Date: "2022-08-31",
			Status: "active",
			Code:   ehr.Coding{System: "http://www.nlm.nih.gov/research/umls/rxnorm", Code: "7980", Display: "Penicillin G"},
			Text:   "Penicillin", LastUpdated: at(t, "2022-09-01T09:00:00Z")}},
		{ehr.TypeImmunization, ehr.Record{ID: "imm-1", PatientID: "example", Date: "2023-10-11T14:55:00-04:00",
			Status: "completed",
			Code:   ehr.Coding{System: "http://hl7.org/fhir/sid/cvx", Code: "197", Display: "influenza, high-dose, quadrivalent"},
			Text:   "Influenza, high dose seasonal", LastUpdated: at(t, "2023-10-11T19:20:00Z")}},
		{ehr.TypeProcedure, ehr.Record{ID: "defib-implant", PatientID: "example", Date: "2021-06-29",
			Status: "completed",
			Code: ehr.Coding{System: "http://snomed.info/sct", Code: "447365002",
				Display: "Insertion of biventricular implantable cardioverter defibrillator"},
			Text: "Insertion of biventricular implantable cardioverter defibrillator", LastUpdated: at(t, "2021-07-02T00:00:00Z")}},
		{ehr.TypeDocumentReference, ehr.Record{ID: "episode-summary", PatientID: "example", Date: "2024-01-08T17:26:45+00:00",
			Status:      "current",
			Code:        ehr.Coding{System: "http://loinc.org", Code: "34133-9", Display: "Summary of episode note"},
			Text:        "CCD Document",
			Attachment:  &ehr.Attachment{ContentType: "text/plain", Title: "Episode summary", Size: sizeOf(49)},
			LastUpdated: at(t, "2024-01-08T17:30:00Z")}},
		{ehr.TypeDiagnosticReport, ehr.Record{ID: "cbc", PatientID: "example", Date: "2024-05-02T07:45:00-04:00",
			Status: "final",
			Code:   ehr.Coding{System: "http://loinc.org", Code: "58410-2", Display: "CBC panel - Blood by Automated count"},
			Text:   "Complete Blood Count", LastUpdated: at(t, "2024-05-03T13:00:00Z")}},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "records", strings.ToLower(string(tt.typ))+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got, err := toRecord(tt.typ, raw)
			if err != nil {
				t.Fatalf("toRecord: %v", err)
			}
			tt.want.Type = tt.typ
			checkRecord(t, got, tt.want)
			// A search page's entry, its header already decoded, converts
			// the same without the second look at it.
			typed, err := convertTyped(tt.typ, raw)
			if err != nil {
				t.Fatalf("convertTyped: %v", err)
			}
			checkRecord(t, typed, tt.want)
		})
	}
}

func checkRecord(t *testing.T, got, want ehr.Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("record\n got %s\nwant %s", dump(got), dump(want))
	}
}

func dump(r ehr.Record) string {
	b, _ := json.Marshal(r)
	return string(b)
}

// TestToRecordFallbacks checks the contract's second choices for the date,
// code and text, and the value's forms.
func TestToRecordFallbacks(t *testing.T) {
	tests := []struct {
		name string
		typ  ehr.ClinicalType
		raw  string
		want ehr.Record
	}{
		{"condition dated by recordedDate", ehr.TypeCondition,
			`{"resourceType":"Condition","id":"c1","clinicalStatus":{"coding":[{"code":"resolved"}]},
			"code":{"coding":[{"system":"http://snomed.info/sct","code":"195662009","display":"Acute viral pharyngitis"}]},
			"subject":{"reference":"Patient/p1"},"onsetString":"as a child","recordedDate":"2020-02-03"}`,
			ehr.Record{ID: "c1", PatientID: "p1", Date: "2020-02-03", Status: "resolved",
				Code: ehr.Coding{System: "http://snomed.info/sct", Code: "195662009", Display: "Acute viral pharyngitis"},
				Text: "Acute viral pharyngitis"}},
		{"condition onsetPeriod", ehr.TypeCondition,
			`{"resourceType":"Condition","id":"c2","subject":{"reference":"Patient/p1"},
			"onsetPeriod":{"start":"2018-05","end":"2018-07"},"recordedDate":"2020-02-03"}`,
			ehr.Record{ID: "c2", PatientID: "p1", Date: "2018-05"}},
		{"observation effectivePeriod, valueString", ehr.TypeObservation,
			`{"resourceType":"Observation","id":"o1","status":"amended","code":{"text":"Smoking status"},
			"subject":{"reference":"https://ehr.example/fhir/Patient/p2/_history/3"},
			"effectivePeriod":{"start":"2022-01-10T08:00:00Z"},"issued":"2022-01-11T00:00:00Z","valueString":"Never smoker"}`,
			ehr.Record{ID: "o1", PatientID: "p2", Date: "2022-01-10T08:00:00Z", Status: "amended", Text: "Smoking status",
				Value: &ehr.RecordValue{String: "Never smoker"}}},
		{"observation issued, valueCodeableConcept", ehr.TypeObservation,
			`{"resourceType":"Observation","id":"o2","subject":{"reference":"Patient/p2"},"issued":"2022-01-11T00:00:00.000Z",
			"valueCodeableConcept":{"coding":[{"system":"http://snomed.info/sct","code":"260385009","display":"Negative"}]}}`,
			ehr.Record{ID: "o2", PatientID: "p2", Date: "2022-01-11T00:00:00.000Z", Value: &ehr.RecordValue{String: "Negative"}}},
		{"observation quantity precision and unit from code", ehr.TypeObservation,
			`{"resourceType":"Observation","id":"o3","valueQuantity":{"value":0.0100,"system":"http://unitsofmeasure.org","code":"mmol/L"}}`,
			ehr.Record{ID: "o3", Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "0.0100", Unit: "mmol/L"}}}},
		{"observation without value", ehr.TypeObservation,
			`{"resourceType":"Observation","id":"o4","valueBoolean":true,"component":[{"valueQuantity":{"value":120}}]}`,
			ehr.Record{ID: "o4"}},
		{"encounter with only class", ehr.TypeEncounter,
			`{"resourceType":"Encounter","id":"e1","status":"in-progress",
			"class":{"system":"http://terminology.hl7.org/CodeSystem/v3-ActCode","code":"IMP","display":"inpatient encounter"},
			"subject":{"reference":"Patient/p3"},"period":{"start":"2024-07-01"}}`,
			ehr.Record{ID: "e1", PatientID: "p3", Date: "2024-07-01", Status: "in-progress",
				Code: ehr.Coding{System: "http://terminology.hl7.org/CodeSystem/v3-ActCode", Code: "IMP", Display: "inpatient encounter"},
				Text: "inpatient encounter"}},
		{"encounter type with text only", ehr.TypeEncounter,
			`{"resourceType":"Encounter","id":"e2","class":{"code":"AMB"},"type":[{"text":"Walk-in"}]}`,
			ehr.Record{ID: "e2", Code: ehr.Coding{Code: "AMB"}, Text: "Walk-in"}},
		{"allergy dated by onset", ehr.TypeAllergyIntolerance,
			`{"resourceType":"AllergyIntolerance","id":"a1","patient":{"reference":"Patient/p4"},"onsetDateTime":"2001"}`,
			ehr.Record{ID: "a1", PatientID: "p4", Date: "2001"}},
		{"procedure performedPeriod", ehr.TypeProcedure,
			`{"resourceType":"Procedure","id":"pr1","subject":{"reference":"Patient/p5"},"performedPeriod":{"start":"2019-09-09T10:00:00+02:00"}}`,
			ehr.Record{ID: "pr1", PatientID: "p5", Date: "2019-09-09T10:00:00+02:00"}},
		{"document dated by context period", ehr.TypeDocumentReference,
			`{"resourceType":"DocumentReference","id":"d1","subject":{"reference":"Patient/p6"},
			"context":{"period":{"start":"2015-03-01"}},"content":[{"attachment":{"contentType":"application/pdf","size":1.5}}]}`,
			ehr.Record{ID: "d1", PatientID: "p6", Date: "2015-03-01", Attachment: &ehr.Attachment{ContentType: "application/pdf"}}},
		{"medication by reference, subject not a patient", ehr.TypeMedicationRequest,
			`{"resourceType":"MedicationRequest","id":"m1","status":"stopped","subject":{"reference":"Group/g1"},
			"medicationReference":{"reference":"Medication/med1"}}`,
			ehr.Record{ID: "m1", Status: "stopped"}},
		{"immunization occurrenceString, contained patient", ehr.TypeImmunization,
			`{"resourceType":"Immunization","id":"i1","status":"completed","patient":{"reference":"#pat"},"occurrenceString":"childhood"}`,
			ehr.Record{ID: "i1", Status: "completed"}},
		{"diagnostic report issued", ehr.TypeDiagnosticReport,
			`{"resourceType":"DiagnosticReport","id":"r1","subject":{"reference":"Patient/p7"},"issued":"2024-05-03T09:00:00-04:00","meta":{"lastUpdated":"not a time"}}`,
			ehr.Record{ID: "r1", PatientID: "p7", Date: "2024-05-03T09:00:00-04:00"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toRecord(tt.typ, json.RawMessage(tt.raw))
			if err != nil {
				t.Fatalf("toRecord: %v", err)
			}
			tt.want.Type = tt.typ
			checkRecord(t, got, tt.want)
			// A search page's entry, its header already decoded, converts
			// the same without the second look at it.
			typed, err := convertTyped(tt.typ, json.RawMessage(tt.raw))
			if err != nil {
				t.Fatalf("convertTyped: %v", err)
			}
			checkRecord(t, typed, tt.want)
		})
	}
}

// TestToRecordNoDocumentContent makes sure a DocumentReference's url and
// data never reach the record.
func TestToRecordNoDocumentContent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "records", "documentreference.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := toRecord(ehr.TypeDocumentReference, raw)
	if err != nil {
		t.Fatal(err)
	}
	out := dump(r)
	for _, s := range []string{"example.invalid", "Binary", "U3ludGhldGlj"} {
		if strings.Contains(out, s) {
			t.Errorf("record %s holds %q of the attachment", out, s)
		}
	}
}

func TestToRecordErrors(t *testing.T) {
	tests := []struct {
		name, raw string
		typ       ehr.ClinicalType
		want      string
	}{
		{"wrong resourceType", `{"resourceType":"Condition","id":"c1"}`, ehr.TypeObservation, "it is a Condition, not an Observation"},
		{"operation outcome", `{"resourceType":"OperationOutcome","issue":[{"diagnostics":"gone"}]}`, ehr.TypeProcedure,
			"it is an OperationOutcome, not a Procedure: gone"},
		{"missing id", `{"resourceType":"Immunization","patient":{"reference":"Patient/secret-99"}}`, ehr.TypeImmunization,
			"an Immunization without an id"},
		{"blank id", `{"resourceType":"Encounter","id":"  "}`, ehr.TypeEncounter, "an Encounter without an id"},
		{"malformed JSON", `{"resourceType":"Observation","id":"o1",`, ehr.TypeObservation, "the body is not valid JSON"},
		{"not an object", `[1,2]`, ehr.TypeCondition, "the body is not a FHIR resource"},
		{"wrong element type", `{"resourceType":"Observation","id":"o1","code":"Jane Doe 1970-01-01"}`, ehr.TypeObservation,
			"it is not a valid Observation"},
		{"bad decimal", `{"resourceType":"Observation","id":"o1","valueQuantity":{"value":"five"}}`, ehr.TypeObservation,
			"it is not a valid Observation"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := toRecord(tt.typ, json.RawMessage(tt.raw))
			var de *decodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *decodeError", err)
			}
			if de.msg != tt.want {
				t.Errorf("message %q, want %q", de.msg, tt.want)
			}
			for _, secret := range []string{"secret-99", "Jane", "five"} {
				if strings.Contains(de.msg, secret) {
					t.Errorf("message %q holds data of the resource", de.msg)
				}
			}
			// Of the right type and valid JSON (a search page's entry):
			// convertTyped fails the same.
			if json.Valid([]byte(tt.raw)) && strings.Contains(tt.raw, `"resourceType":"`+string(tt.typ)+`"`) {
				_, err := convertTyped(tt.typ, json.RawMessage(tt.raw))
				if !errors.As(err, &de) || de.msg != tt.want {
					t.Errorf("convertTyped: %v, want %q", err, tt.want)
				}
			}
		})
	}
	if _, err := convertTyped("Patient", json.RawMessage(`{"resourceType":"Patient","id":"1"}`)); err == nil {
		t.Error("convertTyped: a Patient converted as a clinical record")
	}
	if _, err := toRecord("Patient", json.RawMessage(`{"resourceType":"Patient","id":"1"}`)); err == nil {
		t.Error("a Patient converted as a clinical record")
	}
}

func TestRecordDateParam(t *testing.T) {
	want := map[ehr.ClinicalType]struct {
		param  string
		covers bool
	}{
		ehr.TypeEncounter:          {"date", true},
		ehr.TypeCondition:          {"onset-date", false},
		ehr.TypeObservation:        {"date", false},
		ehr.TypeMedicationRequest:  {"authoredon", true},
		ehr.TypeAllergyIntolerance: {"", false},
		ehr.TypeImmunization:       {"date", true},
		ehr.TypeProcedure:          {"date", true},
		ehr.TypeDocumentReference:  {"date", false},
		ehr.TypeDiagnosticReport:   {"date", false},
	}
	for _, typ := range ehr.ClinicalTypes {
		p, c := recordDateParam(typ)
		if w := want[typ]; p != w.param || c != w.covers {
			t.Errorf("%s: (%q, %v), want (%q, %v)", typ, p, c, w.param, w.covers)
		}
	}
	if len(want) != len(ehr.ClinicalTypes) {
		t.Errorf("%d types checked of %d", len(want), len(ehr.ClinicalTypes))
	}
}
