package ehr

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCacheCodec_RoundTripIsEqual(t *testing.T) {
	full := Person{
		ID:          "p-1",
		Sources:     []SourceRef{{Source: "clinic-a", PatientID: "123"}, {Source: "clinic-b", PatientID: "b-9"}},
		Name:        HumanName{Family: "López", Given: []string{"Ana", "María"}, Text: "Ana María López"},
		BirthDate:   "1980-02-01",
		Gender:      "female",
		Identifiers: []Identifier{{System: "urn:mrn", Value: "77", Type: "MR"}, {Value: "X-1"}},
		Telecom:     []ContactPoint{{System: "phone", Value: "+1 512 555 0100", Use: "mobile"}, {System: "email", Value: "ana@example.com"}},
		Address:     []Address{{Line: []string{"1 Main St", "Apt 2"}, City: "Austin", State: "TX", PostalCode: "78701", Country: "US"}, {Line: []string{}, City: "Waco"}},
		LastUpdated: time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC),
	}
	// As Merge makes them: empty, not nil, slices; no optional fields.
	bare := Person{ID: "p-2", Sources: []SourceRef{{Source: "clinic-a", PatientID: "9"}}, Name: HumanName{Given: []string{}},
		Identifiers: []Identifier{}, Telecom: []ContactPoint{}, Address: []Address{}}
	for name, c := range map[string]cached{
		"merged answer": {People: []Person{full, bare}, Sources: []string{"clinic-a", "clinic-b"}},
		"no people":     {People: []Person{}, Sources: []string{"clinic-a"}},
		"nil slices":    {People: []Person{{ID: "p-3"}}},
		"empty":         {},
	} {
		t.Run(name, func(t *testing.T) {
			raw, err := encodeCached(c)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeCached(raw)
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
		if _, err := decodeCached([]byte(raw)); err == nil {
			t.Errorf("decodeCached(%q) succeeded", raw)
		}
	}
}

func TestCacheKey_IsVersioned(t *testing.T) {
	if k := cacheKey("subject", validated{}, nil); !strings.HasPrefix(k, cacheKeyPrefix) || cacheKeyPrefix != "search:v2:" {
		t.Errorf("cache key %q; want the prefix search:v2:", k)
	}
}
