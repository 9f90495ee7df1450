package redis

import (
	"reflect"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestCacheCodec_RoundTripIsEqual(t *testing.T) {
	full := ehr.Patient{
		ID:          "123",
		Source:      "clinic-a",
		Name:        ehr.HumanName{Family: "López", Given: []string{"Ana", "María"}, Text: "Ana María López", Suffix: []string{"Jr"}},
		BirthDate:   "1980-02-01",
		Gender:      "female",
		Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}, {Value: "X-1"}},
		Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}, {System: "email", Value: "ana@example.com"}},
		Address:     []ehr.Address{{Line: []string{"1 Main St", "Apt 2"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}, {Line: []string{}, City: "Waco"}},
		LastUpdated: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
	}
	bare := ehr.Patient{ID: "9", Source: "clinic-b", Name: ehr.HumanName{Given: []string{}}, Identifiers: []ehr.Identifier{}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{}}
	size, zero := int64(48213), int64(0)
	observation := ehr.Record{
		Type: ehr.TypeObservation, ID: "obs-1", PatientID: "123", Date: "2024-03-01T08:30:00-05:00", Status: "final",
		Code: ehr.Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}, Text: "Glucose [Mass/volume] in Serum",
		Value:       &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
		LastUpdated: time.Date(2024, 3, 2, 1, 2, 3, 4, time.UTC),
	}
	records := []ehr.Record{observation,
		{ID: "r-2", Type: ehr.TypeObservation, Value: &ehr.RecordValue{String: "positive"}},
		{ID: "r-3", Type: ehr.TypeObservation, Value: &ehr.RecordValue{}},                          // a value that is neither
		{ID: "r-4", Type: ehr.TypeObservation, Value: &ehr.RecordValue{Quantity: &ehr.Quantity{}}}, // an empty quantity
		{ID: "r-5", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{ContentType: "application/pdf", Title: "Discharge summary", Size: &size}},
		{ID: "r-6", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{Size: &zero}},
		{ID: "r-7", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{}},
		{ID: "r-8", Type: ehr.TypeCondition},
	}
	for name, c := range map[string]ehr.Answer{
		"patients":       {Patients: []ehr.Patient{full, bare}, Sources: []string{"clinic-a", "clinic-b"}},
		"records answer": {Patients: []ehr.Patient{full}, RecordSets: []ehr.SourceRecords{{Source: "clinic-a", Records: records}, {Source: "clinic-b", Records: []ehr.Record{}}}, Sources: []string{"clinic-a", "clinic-b"}},
		"no records":     {Patients: []ehr.Patient{}, RecordSets: []ehr.SourceRecords{}, Sources: []string{"clinic-a"}},
		"nil slices":     {Patients: []ehr.Patient{{ID: "p-3"}}},
		"empty":          {},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := encodeAnswer(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeAnswer(raw)
			if err != nil {
				t.Fatalf("decode %s: %v", raw, err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Errorf("round trip of %s:\n got %#v\nwant %#v", raw, got, c)
			}
		})
	}
}

func TestCacheCodec_UnreadableEntryIsAnError(t *testing.T) {
	for _, raw := range []string{"", "{", `{"patients":{}}`, `[]`, `{"recordSets":{}}`, `{"recordSets":[{"records":[{"value":"5.4"}]}]}`,
		`{"recordSets":[{"records":[{"attachment":{"size":"12"}}]}]}`} {
		if _, err := decodeAnswer([]byte(raw)); err == nil {
			t.Errorf("decodeAnswer(%q) succeeded", raw)
		}
	}
}

// The stored format is pinned byte for byte: a change of it is a change
// of the cache key's version (search:v4:).
func TestAnswer_GoldenFormat(t *testing.T) {
	size := int64(48213)
	for name, tt := range map[string]struct {
		answer ehr.Answer
		golden string
	}{
		"patients": {ehr.Answer{Patients: []ehr.Patient{{
			ID:          "123",
			Source:      "clinic-a",
			Name:        ehr.HumanName{Family: "López", Given: []string{"Ana"}, Text: "Ana López", Suffix: []string{}},
			BirthDate:   "1980-02-01",
			Gender:      "female",
			Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}},
			Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}},
			Address:     []ehr.Address{{Line: []string{"1 Main St"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}},
			LastUpdated: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		}, {ID: "9", Source: "clinic-b", Name: ehr.HumanName{Given: []string{}}, Identifiers: []ehr.Identifier{}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{}}},
			Sources: []string{"clinic-a"}},
			`{"patients":[{"id":"123","source":"clinic-a",` +
				`"name":{"family":"López","given":["Ana"],"text":"Ana López","suffix":[]},"birthDate":"1980-02-01","gender":"female",` +
				`"identifiers":[{"system":"urn:mrn","value":"77","type":"MR"}],"telecom":[{"system":"phone","value":"+1 512 555 0100","use":"mobile"}],` +
				`"address":[{"line":["1 Main St"],"city":"Austin","state":"TX","postalCode":"78701","country":"US"}],` +
				`"lastUpdated":"2024-05-06T07:08:09.123456789Z"},` +
				`{"id":"9","source":"clinic-b","name":{"given":[],"suffix":null},"identifiers":[],"telecom":[],"address":[]}],"recordSets":null,"sources":["clinic-a"]}`},
		"records": {ehr.Answer{Patients: []ehr.Patient{}, RecordSets: []ehr.SourceRecords{{Source: "clinic-a", Records: []ehr.Record{{
			Type: ehr.TypeObservation, ID: "obs-1", PatientID: "123", Date: "2024-03-01T08:30:00-05:00", Status: "final",
			Code: ehr.Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}, Text: "Glucose",
			Value:       &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
			LastUpdated: time.Date(2024, 3, 2, 1, 2, 3, 0, time.UTC),
		}, {ID: "r-2", Type: ehr.TypeObservation, Value: &ehr.RecordValue{String: "positive"}},
			{ID: "r-3", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{ContentType: "application/pdf", Title: "Summary", Size: &size}},
			{ID: "r-4", Type: ehr.TypeCondition, Code: ehr.Coding{Code: "44054006"}}}}},
			Sources: []string{"clinic-a"}},
			`{"patients":[],"recordSets":[{"source":"clinic-a","records":[{"type":"Observation","id":"obs-1","patientId":"123",` +
				`"date":"2024-03-01T08:30:00-05:00","status":"final",` +
				`"code":{"system":"http://loinc.org","code":"2345-7","display":"Glucose"},"text":"Glucose",` +
				`"value":{"quantity":{"value":"5.40","unit":"mmol/L"}},"lastUpdated":"2024-03-02T01:02:03Z"},` +
				`{"type":"Observation","id":"r-2","patientId":"","code":{},"value":{"string":"positive"}},` +
				`{"type":"DocumentReference","id":"r-3","patientId":"","code":{},"attachment":{"contentType":"application/pdf","title":"Summary","size":48213}},` +
				`{"type":"Condition","id":"r-4","patientId":"","code":{"code":"44054006"}}]}],"sources":["clinic-a"]}`},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := encodeAnswer(tt.answer)
			if err != nil || string(raw) != tt.golden {
				t.Fatalf("encode: %s (%v)\nwant %s", raw, err, tt.golden)
			}
			got, err := decodeAnswer([]byte(tt.golden))
			if err != nil || !reflect.DeepEqual(got, tt.answer) {
				t.Fatalf("decode: %#v (%v)\nwant %#v", got, err, tt.answer)
			}
		})
	}
}
