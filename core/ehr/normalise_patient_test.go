package ehr

import (
	"reflect"
	"testing"
	"time"
)

func TestNormalContactPoint_TrimsAndDropsEmptyValues(t *testing.T) {
	tests := []struct {
		in     ContactPoint
		want   ContactPoint
		wantOK bool
	}{
		{ContactPoint{" phone ", " +1 202 ", " home "}, ContactPoint{"phone", "+1 202", "home"}, true},
		{ContactPoint{"email", "   ", "work"}, ContactPoint{"email", "", "work"}, false},
		{ContactPoint{}, ContactPoint{}, false},
	}
	for _, tt := range tests {
		got, ok := normalContactPoint(tt.in)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("normalContactPoint(%+v) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestNormalAddress_TrimsAndDropsEmptyAddresses(t *testing.T) {
	tests := []struct {
		in     Address
		want   Address
		wantOK bool
	}{
		{Address{Line: []string{" 1 Main St ", " ", ""}, City: " Springfield "},
			Address{Line: []string{"1 Main St"}, City: "Springfield"}, true},
		{Address{Country: " US "}, Address{Country: "US"}, true},
		{Address{Line: []string{" "}, City: " ", PostalCode: "\t"}, Address{}, false},
	}
	for _, tt := range tests {
		got, ok := normalAddress(tt.in)
		if !reflect.DeepEqual(got, tt.want) || ok != tt.wantOK {
			t.Errorf("normalAddress(%+v) = %+v, %v; want %+v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

// Every adapter's patients leave it normalised the same way: what the
// rule keeps, trims and drops is written here once.
func TestNormalPatient_TrimsAndDropsWhatEveryAdapterDrops(t *testing.T) {
	at := time.Date(2030, 3, 4, 15, 0, 0, 0, time.UTC)
	chicago := time.FixedZone("CST", -6*3600)
	tests := []struct {
		name string
		in   Patient
		want Patient
	}{
		{"zero", Patient{}, Patient{}},
		{"trimmed and dropped",
			Patient{
				ID: " p-1 ", Source: "ehr-a", BirthDate: " 1980-05-01T00:00:00Z", Gender: " Female ",
				Name:        HumanName{Family: " Doe ", Given: []string{" Jane ", " ", ""}, Text: "  Jane \t Q.  Doe ", Suffix: []string{" ", "Jr "}},
				Identifiers: []Identifier{{" urn:mrn ", " 123 ", " MR "}, {"urn:x", "  ", "MR"}},
				Telecom:     []ContactPoint{{" phone ", " 555 ", " home "}, {"email", "", ""}},
				Address:     []Address{{Line: []string{" 1 Main St "}}, {City: " "}},
				LastUpdated: at.In(chicago),
			},
			Patient{
				ID: "p-1", Source: "ehr-a", BirthDate: "1980-05-01", Gender: "female",
				Name:        HumanName{Family: "Doe", Given: []string{"Jane"}, Text: "Jane Q. Doe", Suffix: []string{"Jr"}},
				Identifiers: []Identifier{{"urn:mrn", "123", "MR"}},
				Telecom:     []ContactPoint{{"phone", "555", "home"}},
				Address:     []Address{{Line: []string{"1 Main St"}}},
				LastUpdated: at,
			}},
		{"unknown gender and bad date dropped, text from the parts",
			Patient{Gender: "f", BirthDate: "05/01/1980", Name: HumanName{Family: " Doe ", Given: []string{"Jane", " Ann "}}},
			Patient{Name: HumanName{Family: "Doe", Given: []string{"Jane", "Ann"}, Text: "Jane Ann Doe"}}},
		{"partial date kept", Patient{BirthDate: "1980-05", Gender: "UNKNOWN"}, Patient{BirthDate: "1980-05", Gender: "unknown"}},
	}
	for _, tt := range tests {
		got := NormalPatient(tt.in)
		if !reflect.DeepEqual(got, tt.want) || got.LastUpdated.Location() != time.UTC {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func TestNormalTime_UTCOrZero(t *testing.T) {
	for in, want := range map[string]time.Time{
		" 2030-03-04T09:00:00.5-06:00 ": time.Date(2030, 3, 4, 15, 0, 0, 5e8, time.UTC),
		"2030-03-04":                    {},
		"":                              {},
	} {
		if got := NormalTime(in); !got.Equal(want) || got != want {
			t.Errorf("NormalTime(%q) = %v, want %v", in, got, want)
		}
	}
}
