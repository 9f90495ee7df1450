package demoehr

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestPeople_AreDeterministicDistinctAndOverlapByMRN(t *testing.T) {
	names := map[string]bool{}
	mrns := map[string]bool{}
	for i := range demoPeople {
		p := person(i)
		if !reflect.DeepEqual(p, person(i)) {
			t.Fatalf("person %d differs between two calls", i)
		}
		if names[p.Name.Text+p.BirthDate] || mrns[p.Identifiers[0].Value] {
			t.Fatalf("person %d repeats another: %+v", i, p)
		}
		names[p.Name.Text+p.BirthDate], mrns[p.Identifiers[0].Value] = true, true
		if b, err := time.Parse(time.DateOnly, p.BirthDate); err != nil || b.After(time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("person %d born %q", i, p.BirthDate)
		}
	}
	if both := fhirPeople - botFrom; demoPeople < 50 || both != 10 {
		t.Fatalf("%d people, %d in both EHRs", demoPeople, both)
	}
}

func TestFreeTime_CoversTheComingTwoWeeksInTheAgentsZone(t *testing.T) {
	now := time.Date(2026, 3, 6, 12, 0, 0, 0, time.UTC) // a Friday; DST starts on the 8th in the US
	free := freeTime("America/New_York", now)
	if len(free) != 12 { // 14 days less two Sundays
		t.Fatalf("%d open days", len(free))
	}
	for _, p := range free {
		if p.Start.Hour() != 9 || p.End.Hour() != 17 || p.Start.Location().String() != "America/New_York" || p.Start.Weekday() == time.Sunday {
			t.Fatalf("open %v–%v", p.Start, p.End)
		}
	}
	if !free[0].Start.After(now) || free[len(free)-1].Start.After(now.AddDate(0, 0, 15)) {
		t.Fatalf("span %v … %v", free[0].Start, free[len(free)-1].Start)
	}
	zones := map[string]bool{}
	for _, a := range practitioners {
		zones[a.Timezone] = true
	}
	if len(practitioners) != 3 || len(zones) != 2 {
		t.Fatalf("%d practitioners in %d zones", len(practitioners), len(zones))
	}
}

// The matching cases are there with the shapes they are made to show
// (CONTRACT.md, "Who is the same person"): what agrees and what does not
// between each case's two records, checked here without the matcher.
func TestCases_HaveTheShapesTheyShow(t *testing.T) {
	type shape struct {
		family, given, birth bool // agree (given: exactly)
		givenTypo            bool // the given names differ by one typo
		phone, email, addr   bool // agree, normalised
		fhirNoContact        bool
		botNoContact         bool
	}
	want := map[string]shape{
		CaseTypo:      {family: true, givenTypo: true, birth: true, phone: true, addr: true},
		CaseNamesakes: {family: true, given: true, birth: true},
		CaseHousehold: {family: true, phone: true, addr: true},
		CaseProbable:  {family: true, given: true, birth: true, botNoContact: true},
	}
	cases := Cases()
	if len(cases) != len(want) {
		t.Fatalf("%d cases, want %d", len(cases), len(want))
	}
	ids, families := map[string]bool{}, map[string]bool{}
	for i := range demoPeople {
		families[lower(person(i).Name.Family)] = true
	}
	for _, c := range cases {
		w, ok := want[c.Name]
		if !ok {
			t.Fatalf("an unknown case %q", c.Name)
		}
		f, b := c.FHIR, c.Bot
		t.Run(c.Name, func(t *testing.T) {
			got := shape{
				family:        f.Name.Family == b.Name.Family,
				given:         f.Name.Given[0] == b.Name.Given[0],
				givenTypo:     editDistance(lower(f.Name.Given[0]), lower(b.Name.Given[0])) == 1 && len(f.Name.Given[0]) >= 5,
				birth:         f.BirthDate == b.BirthDate,
				phone:         shared(f, b, "phone", nationalDigits),
				email:         shared(f, b, "email", lower),
				addr:          len(f.Address) > 0 && len(b.Address) > 0 && addressKey(f.Address[0]) == addressKey(b.Address[0]),
				fhirNoContact: len(f.Telecom) == 0 && len(f.Address) == 0,
				botNoContact:  len(b.Telecom) == 0 && len(b.Address) == 0,
			}
			if got != w {
				t.Fatalf("shape %+v, want %+v:\n%+v\n%+v", got, w, f, b)
			}
			// Two systems' own MRNs: no identifier shared, none clashing.
			if len(f.Identifiers) != 1 || len(b.Identifiers) != 1 || f.Identifiers[0].System != FHIRMRNSystem ||
				b.Identifiers[0].System != BotMRNSystem || f.Identifiers[0].Type != "MR" || b.Identifiers[0].Type != "MR" {
				t.Fatalf("identifiers %+v, %+v", f.Identifiers, b.Identifiers)
			}
			if f.Name.Family != c.Family || b.Name.Family != c.Family {
				t.Fatalf("family %q, %q; case %q", f.Name.Family, b.Name.Family, c.Family)
			}
			// A search of the family name answers the case alone: no
			// other person's family name starts like it or it like theirs.
			for other := range families {
				if strings.HasPrefix(other, lower(c.Family)) || strings.HasPrefix(lower(c.Family), other) {
					t.Fatalf("family %q meets %q", c.Family, other)
				}
			}
			for _, p := range []ehr.Patient{f, b} {
				if ids[p.ID] || p.Gender == "" || p.Name.Text != p.Name.Given[0]+" "+p.Name.Family {
					t.Fatalf("record %+v: id repeated, or no gender, or name text", p)
				}
				ids[p.ID] = true
				for _, tc := range p.Telecom {
					if d := nationalDigits(tc.Value); tc.System == "phone" && (len(d) != 10 || d[3:8] != "55501") ||
						tc.System == "email" && !strings.HasSuffix(tc.Value, "@example.org") {
						t.Fatalf("%s is not fiction's", tc.Value)
					}
				}
			}
		})
		families[lower(c.Family)] = true
	}
	// The typo pair is written the way the issue asks: the same phone and
	// address in two spellings.
	typo := cases[0]
	if typo.FHIR.Name.Given[0] != "Marisabel" || typo.Bot.Name.Given[0] != "Marisabell" ||
		typo.FHIR.Telecom[0].Value == typo.Bot.Telecom[0].Value ||
		typo.FHIR.Address[0].Line[0] != "12 Elm St" || typo.Bot.Address[0].Line[0] != "12 Elm Street" {
		t.Fatalf("typo pair %+v / %+v", typo.FHIR, typo.Bot)
	}
	// The record without contact details goes to the FHIR server without
	// empty (or null) elements.
	r := fhirPatient(cases[3].Bot)
	for _, k := range []string{"telecom", "address"} {
		if _, ok := r[k]; ok {
			t.Fatalf("FHIR Patient of a record without %s has one: %v", k, r)
		}
	}
	if got := CaseFamily(CaseProbable); got != "Penhallow" || CaseFamily("none") != "" {
		t.Fatalf("CaseFamily: %q", got)
	}
}

// shared tells whether a and b have a contact point of system that agrees
// once key has normalised it.
func shared(a, b ehr.Patient, system string, key func(string) string) bool {
	for _, x := range a.Telecom {
		for _, y := range b.Telecom {
			if x.System == system && y.System == system && key(x.Value) == key(y.Value) {
				return true
			}
		}
	}
	return false
}

// nationalDigits is a US phone number's ten digits.
func nationalDigits(v string) string {
	var d []byte
	for _, c := range []byte(v) {
		if c >= '0' && c <= '9' {
			d = append(d, c)
		}
	}
	if len(d) == 11 && d[0] == '1' {
		d = d[1:]
	}
	return string(d)
}

// addressKey is an address's first line and postal code, in lower case,
// without punctuation, with the street types abbreviated.
func addressKey(a ehr.Address) string {
	words := strings.FieldsFunc(lower(a.Line[0]), func(r rune) bool { return r == ' ' || r == '.' || r == ',' })
	for i, w := range words {
		if short, ok := map[string]string{"street": "st", "lane": "ln", "road": "rd", "drive": "dr"}[w]; ok {
			words[i] = short
		}
	}
	return strings.Join(words, " ") + "|" + a.PostalCode
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
