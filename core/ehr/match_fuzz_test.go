package ehr

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// Whatever an EHR writes in a name, phone or address, normalising it
// neither panics nor makes something comparing differently when
// normalised again, and a phone comes out as digits (E.164: a + first).
func FuzzTraits(f *testing.F) {
	for _, seed := range [][4]string{
		{"De La Peña Jr.", "José María", "+1-217-555-0633", "12 North Elm Street, Apt 4"},
		{"Ørsted", "Zoë", "(217) 555-0633 x12", "1 Main St"},
		{"", "", "+44 20 7946 0958", ""},
		{"\xff\xfe", "\u0301", "++1", "#"},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, family, given, phone, line string) {
		p := Patient{Name: HumanName{Family: family, Given: []string{given}},
			Telecom: []ContactPoint{{System: "phone", Value: phone}}, Address: []Address{{Line: []string{line}, PostalCode: "62701"}}}
		tr := newNormaliser(1).traitsOf(p)
		for _, n := range tr.phones {
			digits := strings.TrimPrefix(n, "+")
			if digits == "" || strings.Trim(digits, "0123456789") != "" {
				t.Fatalf("phone %q normalised to %q", phone, n)
			}
		}
		if utf8.ValidString(family) && foldName(foldName(family)) != foldName(family) {
			t.Fatalf("folding %q twice differs", family)
		}
		if c := compare(&tr, &tr); c.vetoed && tr.birth != "" {
			t.Fatalf("a record is vetoed against itself: %+v", c)
		}
	})
}
