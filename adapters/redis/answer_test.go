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
	for name, c := range map[string]ehr.Answer{
		"merged answer": {People: []ehr.Person{full, bare}, Sources: []string{"clinic-a", "clinic-b"}},
		"no people":     {People: []ehr.Person{}, Sources: []string{"clinic-a"}},
		"nil slices":    {People: []ehr.Person{{ID: "p-3"}}},
		"empty":         {},
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
	for _, raw := range []string{"", "{", `{"people":{}}`, `[]`} {
		if _, err := decodeAnswer([]byte(raw)); err == nil {
			t.Errorf("decodeAnswer(%q) succeeded", raw)
		}
	}
}

// The stored format is pinned byte for byte: entries written before the
// format moved out of core/ehr decode to the same answer.
func TestAnswer_GoldenFormat(t *testing.T) {
	a := ehr.Answer{People: []ehr.Person{{
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
		Sources: []string{"clinic-a"}}
	const golden = `{"people":[{"id":"p-1","sources":[{"source":"clinic-a","patientId":"123"}],` +
		`"name":{"family":"López","given":["Ana"],"text":"Ana López"},"birthDate":"1980-02-01","gender":"female",` +
		`"identifiers":[{"system":"urn:mrn","value":"77","type":"MR"}],"telecom":[{"system":"phone","value":"+1 512 555 0100","use":"mobile"}],` +
		`"address":[{"line":["1 Main St"],"city":"Austin","state":"TX","postalCode":"78701","country":"US"}],` +
		`"lastUpdated":"2024-05-06T07:08:09.123456789Z"},` +
		`{"id":"p-2","sources":[],"name":{"given":[]},"identifiers":[],"telecom":[],"address":[]}],"sources":["clinic-a"]}`
	raw, err := encodeAnswer(a)
	if err != nil || string(raw) != golden {
		t.Fatalf("encode: %s (%v)\nwant %s", raw, err, golden)
	}
	got, err := decodeAnswer([]byte(golden))
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("decode: %#v (%v)\nwant %#v", got, err, a)
	}
}
