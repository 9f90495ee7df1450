package fhirtest_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// The record search contract against Medplum, one server for every subtest
// (each seeds its own people), pages of pageSize.
func TestIntegrationFHIRRecords_Contract(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize), fhirtest.WithRequestLog())
	c := fhir.New(newEHRClient(t, srv.URL(), testAPIKey), "")
	ehrtest.TestRecordSearcher(t, func(*testing.T) ehrtest.RecordBackend {
		return ehrtest.RecordBackend{
			Searcher:   c,
			AddPatient: func(t *testing.T) string { return srv.CreatePatient(t, usCorePatient()) },
			AddRecords: func(t *testing.T, seeds []ehrtest.SeedRecord) []string { return srv.AddRecords(t, seeds) },
		}
	})
}

// usCorePatient is a Patient with the elements US Core requires
// (identifier, name, gender).
func usCorePatient() map[string]any {
	return map[string]any{
		"meta":       map[string]any{"profile": []any{"http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient"}},
		"identifier": []any{map[string]any{"system": mrnSystem, "value": "MRN-" + ehrtest.NewID()}},
		"name":       []any{map[string]any{"family": "Okonkwo", "given": []any{"Amara"}}},
		"gender":     "female",
		"birthDate":  "1981-04-12",
	}
}

// usCoreRecords are US Core-shaped resources of the nine types for the
// person {patient}, as an EHR holds them (profiles' required elements,
// LOINC, SNOMED CT, RxNorm and CVX codes), with the records they convert
// to (the id and person are the server's). Some are dated by a fallback
// element only: the Condition by recordedDate, the lab Observation by
// issued, the Procedure and the DiagnosticReport by a Period.
var usCoreRecords = []struct {
	resource string
	want     ehr.Record
}{
	{`{"resourceType":"Encounter","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-encounter"]},
		"identifier":[{"system":"urn:oid:1.2.840.114350","value":"E-20240312-1"}],"status":"finished",
		"class":{"system":"http://terminology.hl7.org/CodeSystem/v3-ActCode","code":"AMB","display":"ambulatory"},
		"type":[{"coding":[{"system":"http://www.ama-assn.org/go/cpt","code":"99213","display":"Office or other outpatient visit for the evaluation and management of an established patient"}],"text":"Office visit"}],
		"subject":{"reference":"Patient/{patient}"},"period":{"start":"2024-03-12T09:00:00-05:00","end":"2024-03-12T09:30:00-05:00"}}`,
		ehr.Record{Type: ehr.TypeEncounter, Date: "2024-03-12T09:00:00-05:00", Status: "finished",
			Code: ehr.Coding{System: "http://www.ama-assn.org/go/cpt", Code: "99213",
				Display: "Office or other outpatient visit for the evaluation and management of an established patient"},
			Text: "Office visit"}},
	{`{"resourceType":"Condition","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-condition-problems-health-concerns"]},
		"clinicalStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/condition-clinical","code":"active"}]},
		"verificationStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/condition-ver-status","code":"confirmed"}]},
		"category":[{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/condition-category","code":"problem-list-item","display":"Problem List Item"}]}],
		"code":{"coding":[{"system":"http://snomed.info/sct","code":"38341003","display":"Hypertensive disorder, systemic arterial (disorder)"}],"text":"Hypertension"},
		"subject":{"reference":"Patient/{patient}"},"recordedDate":"2024-02-20"}`,
		ehr.Record{Type: ehr.TypeCondition, Date: "2024-02-20", Status: "active",
			Code: ehr.Coding{System: "http://snomed.info/sct", Code: "38341003", Display: "Hypertensive disorder, systemic arterial (disorder)"},
			Text: "Hypertension"}},
	{`{"resourceType":"Observation","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-observation-lab"]},
		"status":"final","category":[{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/observation-category","code":"laboratory","display":"Laboratory"}]}],
		"code":{"coding":[{"system":"http://loinc.org","code":"2339-0","display":"Glucose [Mass/volume] in Blood"}]},
		"subject":{"reference":"Patient/{patient}"},"issued":"2024-03-13T14:30:00Z",
		"valueQuantity":{"value":95,"unit":"mg/dL","system":"http://unitsofmeasure.org","code":"mg/dL"},
		"referenceRange":[{"low":{"value":70,"unit":"mg/dL"},"high":{"value":99,"unit":"mg/dL"}}]}`,
		ehr.Record{Type: ehr.TypeObservation, Date: "2024-03-13T14:30:00Z", Status: "final",
			Code: ehr.Coding{System: "http://loinc.org", Code: "2339-0", Display: "Glucose [Mass/volume] in Blood"},
			Text: "Glucose [Mass/volume] in Blood", Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "95", Unit: "mg/dL"}}}},
	{`{"resourceType":"Observation","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-observation-lab"]},
		"status":"final","category":[{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/observation-category","code":"laboratory"}]}],
		"code":{"coding":[{"system":"http://loinc.org","code":"5778-6","display":"Color of Urine"}],"text":"Urine colour"},
		"subject":{"reference":"Patient/{patient}"},"effectiveDateTime":"2024-03-12T08:10:00-05:00","valueString":"Straw yellow"}`,
		ehr.Record{Type: ehr.TypeObservation, Date: "2024-03-12T08:10:00-05:00", Status: "final",
			Code: ehr.Coding{System: "http://loinc.org", Code: "5778-6", Display: "Color of Urine"},
			Text: "Urine colour", Value: &ehr.RecordValue{String: "Straw yellow"}}},
	{`{"resourceType":"MedicationRequest","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-medicationrequest"]},
		"status":"active","intent":"order",
		"medicationCodeableConcept":{"coding":[{"system":"http://www.nlm.nih.gov/research/umls/rxnorm","code":"197361","display":"amlodipine 5 MG Oral Tablet"}],"text":"Amlodipine 5 mg tablet"},
		"subject":{"reference":"Patient/{patient}"},"authoredOn":"2024-03-12","requester":{"display":"Dr. Ana Lopez"},
		"dosageInstruction":[{"text":"Take 1 tablet by mouth once daily"}]}`,
		ehr.Record{Type: ehr.TypeMedicationRequest, Date: "2024-03-12", Status: "active",
			Code: ehr.Coding{System: "http://www.nlm.nih.gov/research/umls/rxnorm", Code: "197361", Display: "amlodipine 5 MG Oral Tablet"},
			Text: "Amlodipine 5 mg tablet"}},
	{`{"resourceType":"AllergyIntolerance","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-allergyintolerance"]},
		"clinicalStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/allergyintolerance-clinical","code":"active"}]},
		"verificationStatus":{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/allergyintolerance-verification","code":"confirmed"}]},
		"code":{"coding":[{"system":"http://www.nlm.nih.gov/research/umls/rxnorm","code":"7980","display":"penicillin G"}],"text":"Penicillin"},
		"patient":{"reference":"Patient/{patient}"},"onsetDateTime":"2009","recordedDate":"2024-03-12T09:20:00-05:00",
		"reaction":[{"manifestation":[{"coding":[{"system":"http://snomed.info/sct","code":"247472004","display":"Hives"}]}]}]}`,
		ehr.Record{Type: ehr.TypeAllergyIntolerance, Date: "2024-03-12T09:20:00-05:00", Status: "active",
			Code: ehr.Coding{System: "http://www.nlm.nih.gov/research/umls/rxnorm", Code: "7980", Display: "penicillin G"},
			Text: "Penicillin"}},
	{`{"resourceType":"Immunization","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-immunization"]},
		"status":"completed","vaccineCode":{"coding":[{"system":"http://hl7.org/fhir/sid/cvx","code":"150","display":"influenza, injectable, quadrivalent, preservative free"}]},
		"patient":{"reference":"Patient/{patient}"},"occurrenceDateTime":"2024-03-12T09:25:00-05:00","primarySource":true,"lotNumber":"FL2024-77"}`,
		ehr.Record{Type: ehr.TypeImmunization, Date: "2024-03-12T09:25:00-05:00", Status: "completed",
			Code: ehr.Coding{System: "http://hl7.org/fhir/sid/cvx", Code: "150", Display: "influenza, injectable, quadrivalent, preservative free"},
			Text: "influenza, injectable, quadrivalent, preservative free"}},
	{`{"resourceType":"Procedure","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-procedure"]},
		"status":"completed","code":{"coding":[{"system":"http://snomed.info/sct","code":"80146002","display":"Excision of appendix (procedure)"}],"text":"Appendectomy"},
		"subject":{"reference":"Patient/{patient}"},"performedPeriod":{"start":"2024-02-03T22:40:00-05:00","end":"2024-02-04T00:10:00-05:00"}}`,
		ehr.Record{Type: ehr.TypeProcedure, Date: "2024-02-03T22:40:00-05:00", Status: "completed",
			Code: ehr.Coding{System: "http://snomed.info/sct", Code: "80146002", Display: "Excision of appendix (procedure)"},
			Text: "Appendectomy"}},
	{`{"resourceType":"DocumentReference","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-documentreference"]},
		"status":"current","type":{"coding":[{"system":"http://loinc.org","code":"34117-2","display":"History and physical note"}]},
		"category":[{"coding":[{"system":"http://hl7.org/fhir/us/core/CodeSystem/us-core-documentreference-category","code":"clinical-note"}]}],
		"subject":{"reference":"Patient/{patient}"},"date":"2024-03-12T17:00:00-05:00","author":[{"display":"Dr. Ana Lopez"}],
		"content":[{"attachment":{"contentType":"text/plain","title":"H&P 12 March 2024","size":42,
			"data":"{data}","url":"https://documents.example/Binary/{secret}"},
			"format":{"system":"http://ihe.net/fhir/ihe.formatcode.fhir/CodeSystem/formatcode","code":"urn:ihe:iti:xds:2017:mimeTypeSufficient"}}]}`,
		ehr.Record{Type: ehr.TypeDocumentReference, Date: "2024-03-12T17:00:00-05:00", Status: "current",
			Code: ehr.Coding{System: "http://loinc.org", Code: "34117-2", Display: "History and physical note"},
			Text: "History and physical note", Attachment: &ehr.Attachment{ContentType: "text/plain", Title: "H&P 12 March 2024", Size: ptr(int64(42))}}},
	{`{"resourceType":"DiagnosticReport","meta":{"profile":["http://hl7.org/fhir/us/core/StructureDefinition/us-core-diagnosticreport-lab"]},
		"status":"final","category":[{"coding":[{"system":"http://terminology.hl7.org/CodeSystem/v2-0074","code":"LAB"}]}],
		"code":{"coding":[{"system":"http://loinc.org","code":"58410-2","display":"CBC panel - Blood by Automated count"}],"text":"CBC"},
		"subject":{"reference":"Patient/{patient}"},"effectivePeriod":{"start":"2024-03-12T08:05:00-05:00"},"issued":"2024-03-12T15:00:00Z"}`,
		ehr.Record{Type: ehr.TypeDiagnosticReport, Date: "2024-03-12T08:05:00-05:00", Status: "final",
			Code: ehr.Coding{System: "http://loinc.org", Code: "58410-2", Display: "CBC panel - Blood by Automated count"},
			Text: "CBC"}},
}

func ptr[T any](v T) *T { return &v }

// Each type's US Core-shaped resources, created (and validated) on
// Medplum, come back from a record search over a range as the contract's
// fields — found by their fallback dates too, and never with a
// document's content or address.
func TestIntegrationFHIRRecords_ConvertsUSCoreResourcesOfEachType(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey))
	c := fhir.New(newEHRClient(t, srv.URL(), testAPIKey), "")
	p := srv.CreatePatient(t, usCorePatient())
	secret := "doc-" + ehrtest.NewID()
	data := base64.StdEncoding.EncodeToString([]byte(secret + " history and physical."))
	want := map[ehr.ClinicalType][]ehr.Record{}
	for _, r := range usCoreRecords {
		raw := strings.NewReplacer("{patient}", p, "{secret}", secret, "{data}", data).Replace(r.resource)
		var res map[string]any
		if err := json.Unmarshal([]byte(raw), &res); err != nil {
			t.Fatalf("%s: %v", r.want.Type, err)
		}
		w := r.want
		w.ID, w.PatientID = srv.Create(t, res)["id"].(string), p
		want[w.Type] = append(want[w.Type], w)
	}
	march := ehr.RecordQuery{PatientID: p, From: ehr.Date{Year: 2024, Month: time.February, Day: 1},
		To: ehr.Date{Year: 2024, Month: time.March, Day: 31}}
	for _, typ := range ehr.ClinicalTypes {
		q := march
		q.Type = typ
		got, err := c.SearchRecords(t.Context(), q)
		if err != nil {
			t.Fatalf("SearchRecords(%s): %v", typ, err)
		}
		if len(got) != len(want[typ]) {
			t.Errorf("%s: %d records, want %d", typ, len(got), len(want[typ]))
		}
		for _, w := range want[typ] {
			i := slices.IndexFunc(got, func(r ehr.Record) bool { return r.ID == w.ID })
			if i < 0 {
				t.Errorf("%s %s (%s) not found", typ, w.ID, w.Date)
				continue
			}
			checkUSCoreRecord(t, got[i], w, secret, data)
		}
	}
}

func checkUSCoreRecord(t *testing.T, got, want ehr.Record, secret, data string) {
	t.Helper()
	if got.LastUpdated.IsZero() {
		t.Errorf("%s %s: no lastUpdated", got.Type, got.ID)
	}
	got.LastUpdated = time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s %s =\n%s\nwant\n%s", got.Type, got.ID, recordText(got), recordText(want))
	}
	if s := recordText(got); strings.Contains(s, secret) || strings.Contains(s, data) {
		t.Errorf("%s %s carries the document's content or address: %s", got.Type, got.ID, s)
	}
}

// recordText writes r with its pointers followed.
func recordText(r ehr.Record) string {
	s := fmt.Sprintf("%+v", r)
	if r.Value != nil {
		s += fmt.Sprintf(" value %+v", *r.Value)
		if r.Value.Quantity != nil {
			s += fmt.Sprintf(" quantity %+v", *r.Value.Quantity)
		}
	}
	if a := r.Attachment; a != nil {
		s += fmt.Sprintf(" attachment %+v", *a)
		if a.Size != nil {
			s += fmt.Sprintf(" size %d", *a.Size)
		}
	}
	return s
}
