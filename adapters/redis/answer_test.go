package redis

import (
	"reflect"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestCacheCodec_RoundTripIsEqual(t *testing.T) {
	full := ehr.Person{
		ID:          "p-1",
		Sources:     []ehr.SourceRef{{Source: "clinic-a", PatientID: "123"}, {Source: "clinic-b", PatientID: "b-9"}},
		Name:        ehr.HumanName{Family: "López", Given: []string{"Ana", "María"}, Text: "Ana María López"},
		BirthDate:   "1980-02-01",
		Gender:      "female",
		Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}, {Value: "X-1"}},
		Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}, {System: "email", Value: "ana@example.com"}},
		Address:     []ehr.Address{{Line: []string{"1 Main St", "Apt 2"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}, {Line: []string{}, City: "Waco"}},
		LastUpdated: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
	}
	// As Merge makes them: empty, not nil, slices; no optional fields.
	bare := ehr.Person{ID: "p-2", Sources: []ehr.SourceRef{{Source: "clinic-a", PatientID: "9"}}, Name: ehr.HumanName{Given: []string{}},
		Identifiers: []ehr.Identifier{}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{}}
	size, zero := int64(48213), int64(0)
	observation := ehr.RecordItem{
		ID: "r-1", Type: ehr.TypeObservation, PersonID: "p-1", Date: "2024-03-01T08:30:00-05:00", Status: "final",
		Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "obs-1", PatientID: "123"}, {Source: "clinic-b", RecordID: "o9", PatientID: "b-9"}},
		Code:    ehr.Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}, Text: "Glucose [Mass/volume] in Serum",
		Value:       &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
		LastUpdated: time.Date(2024, 3, 2, 1, 2, 3, 4, time.UTC),
	}
	records := []ehr.RecordItem{observation,
		{ID: "r-2", Type: ehr.TypeObservation, Sources: []ehr.RecordSource{}, Value: &ehr.RecordValue{String: "positive"}},
		{ID: "r-3", Type: ehr.TypeObservation, Value: &ehr.RecordValue{}},                          // a value that is neither
		{ID: "r-4", Type: ehr.TypeObservation, Value: &ehr.RecordValue{Quantity: &ehr.Quantity{}}}, // an empty quantity
		{ID: "r-5", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{ContentType: "application/pdf", Title: "Discharge summary", Size: &size}},
		{ID: "r-6", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{Size: &zero}},
		{ID: "r-7", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{}},
		{ID: "r-8", Type: ehr.TypeCondition},
	}
	for name, c := range map[string]ehr.Answer{
		"merged answer":  {People: []ehr.Person{full, bare}, Sources: []string{"clinic-a", "clinic-b"}},
		"records answer": {Records: records, Sources: []string{"clinic-a", "clinic-b"}},
		"no records":     {People: []ehr.Person{}, Records: []ehr.RecordItem{}, Sources: []string{"clinic-a"}},
		"no people":      {People: []ehr.Person{}, Sources: []string{"clinic-a"}},
		"nil slices":     {People: []ehr.Person{{ID: "p-3"}}},
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
	for _, raw := range []string{"", "{", `{"people":{}}`, `[]`, `{"records":{}}`, `{"records":[{"value":"5.4"}]}`,
		`{"records":[{"attachment":{"size":"12"}}]}`} {
		if _, err := decodeAnswer([]byte(raw)); err == nil {
			t.Errorf("decodeAnswer(%q) succeeded", raw)
		}
	}
}

// The stored format is pinned byte for byte: a change of it is a change
// of the cache key's version (search:v3:).
func TestAnswer_GoldenFormat(t *testing.T) {
	size := int64(48213)
	for name, tt := range map[string]struct {
		answer ehr.Answer
		golden string
	}{
		"people": {ehr.Answer{People: []ehr.Person{{
			ID:          "p-1",
			Sources:     []ehr.SourceRef{{Source: "clinic-a", PatientID: "123"}},
			Name:        ehr.HumanName{Family: "López", Given: []string{"Ana"}, Text: "Ana López"},
			BirthDate:   "1980-02-01",
			Gender:      "female",
			Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}},
			Telecom:     []ehr.ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}},
			Address:     []ehr.Address{{Line: []string{"1 Main St"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}},
			LastUpdated: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
		}, {ID: "p-2", Sources: []ehr.SourceRef{}, Name: ehr.HumanName{Given: []string{}}, Identifiers: []ehr.Identifier{}, Telecom: []ehr.ContactPoint{}, Address: []ehr.Address{}}},
			Sources: []string{"clinic-a"}},
			`{"people":[{"id":"p-1","sources":[{"source":"clinic-a","patientId":"123"}],` +
				`"name":{"family":"López","given":["Ana"],"text":"Ana López"},"birthDate":"1980-02-01","gender":"female",` +
				`"identifiers":[{"system":"urn:mrn","value":"77","type":"MR"}],"telecom":[{"system":"phone","value":"+1 512 555 0100","use":"mobile"}],` +
				`"address":[{"line":["1 Main St"],"city":"Austin","state":"TX","postalCode":"78701","country":"US"}],` +
				`"lastUpdated":"2024-05-06T07:08:09.123456789Z"},` +
				`{"id":"p-2","sources":[],"name":{"given":[]},"identifiers":[],"telecom":[],"address":[]}],"records":null,"sources":["clinic-a"]}`},
		"records": {ehr.Answer{People: []ehr.Person{}, Records: []ehr.RecordItem{{
			ID: "r-1", Type: ehr.TypeObservation, PersonID: "p-1", Date: "2024-03-01T08:30:00-05:00", Status: "final",
			Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "obs-1", PatientID: "123"}},
			Code:    ehr.Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}, Text: "Glucose",
			Value:       &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
			LastUpdated: time.Date(2024, 3, 2, 1, 2, 3, 0, time.UTC),
		}, {ID: "r-2", Type: ehr.TypeObservation, Sources: []ehr.RecordSource{}, Value: &ehr.RecordValue{String: "positive"}},
			{ID: "r-3", Type: ehr.TypeDocumentReference, Attachment: &ehr.Attachment{ContentType: "application/pdf", Title: "Summary", Size: &size}},
			{ID: "r-4", Type: ehr.TypeCondition, Code: ehr.Coding{Code: "44054006"}}},
			Sources: []string{"clinic-a"}},
			`{"people":[],"records":[{"id":"r-1","type":"Observation","sources":[{"source":"clinic-a","recordId":"obs-1","patientId":"123"}],` +
				`"personId":"p-1","date":"2024-03-01T08:30:00-05:00","status":"final",` +
				`"code":{"system":"http://loinc.org","code":"2345-7","display":"Glucose"},"text":"Glucose",` +
				`"value":{"quantity":{"value":"5.40","unit":"mmol/L"}},"lastUpdated":"2024-03-02T01:02:03Z"},` +
				`{"id":"r-2","type":"Observation","sources":[],"code":{},"value":{"string":"positive"}},` +
				`{"id":"r-3","type":"DocumentReference","sources":null,"code":{},"attachment":{"contentType":"application/pdf","title":"Summary","size":48213}},` +
				`{"id":"r-4","type":"Condition","sources":null,"code":{"code":"44054006"}}],"sources":["clinic-a"]}`},
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
