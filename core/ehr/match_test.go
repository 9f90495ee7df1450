package ehr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// rec is a record of the matching tests: source/id, then what it holds.
type rec struct {
	ref                  string // "a/1"
	family, given, birth string
	phone, email         string
	line, postal         string
	ids                  []Identifier
	suffix               string
}

func (r rec) patient() Patient {
	src, id, _ := strings.Cut(r.ref, "/")
	p := Patient{Source: src, ID: id, Name: HumanName{Family: r.family}, BirthDate: r.birth, Identifiers: r.ids}
	if r.given != "" {
		p.Name.Given = []string{r.given}
	}
	if r.suffix != "" {
		p.Name.Suffix = []string{r.suffix}
	}
	if r.phone != "" {
		p.Telecom = append(p.Telecom, ContactPoint{System: "phone", Value: r.phone})
	}
	if r.email != "" {
		p.Telecom = append(p.Telecom, ContactPoint{System: "email", Value: r.email})
	}
	if r.line != "" {
		p.Address = []Address{{Line: []string{r.line}, PostalCode: r.postal}}
	}
	return p
}

func patients(rs ...rec) []Patient {
	out := make([]Patient, len(rs))
	for i, r := range rs {
		out[i] = r.patient()
	}
	return out
}

// groups writes the people as their records: "a/1+b/2 c/3", sorted.
func groups(people []Person) string {
	var out []string
	for _, p := range people {
		var refs []string
		for _, s := range p.Sources {
			refs = append(refs, s.Source+"/"+s.PatientID)
		}
		slices.Sort(refs)
		out = append(out, strings.Join(refs, "+"))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func ssn(v string) Identifier { return Identifier{System: "http://hl7.org/fhir/sid/us-ssn", Value: v} }

func TestMatchPeople_TheContractsCases(t *testing.T) {
	marisabel := rec{ref: "a/1", family: "Quintero", given: "Marisabel", birth: "1984-06-02", phone: "+1-217-555-0633", line: "12 Elm St", postal: "62701"}
	cases := []struct {
		name     string
		records  []rec
		want     string // the people
		possible bool   // the two people list each other
		reasons  string // of the merged person, or of the possible match
	}{
		{"a typo of a long given name, phone and address written otherwise: certain",
			[]rec{marisabel, {ref: "b/9", family: "QUINTERO", given: "Marisabell", birth: "1984-06-02", phone: "(217) 555-0633", line: "12 Elm Street", postal: "62701-1234"}},
			"a/1+b/9", false, "family given~ birthDate phone address"},
		{"namesakes: one name and birth date, nothing else shared",
			[]rec{{ref: "a/1", family: "Varnettsky", given: "Quillon", birth: "1971-03-14", phone: "217-555-0101", email: "q1@example.org", line: "1 Oak Ave", postal: "62701", ids: []Identifier{ssn("111-22-3333")}},
				{ref: "b/2", family: "Varnettsky", given: "Quillon", birth: "1971-03-14", phone: "217-555-0199", email: "q2@example.org", line: "9 Pine Rd", postal: "60601", ids: []Identifier{ssn("999-88-7777")}}},
			"a/1 b/2", false, ""},
		{"the same name and birth date and nothing else: probable",
			[]rec{{ref: "a/1", family: "Brandt", given: "Olena", birth: "1990-01-05"}, {ref: "b/2", family: "Brandt", given: "Olena", birth: "1990-01-05"}},
			"a/1 b/2", true, "family given birthDate"},
		{"a shared identifier: certain",
			[]rec{{ref: "a/1", family: "Ng", given: "Al", birth: "1950-02-02", ids: []Identifier{ssn("123-45-6789")}}, {ref: "b/2", family: "Ng", given: "Al", ids: []Identifier{ssn("123-45-6789")}}},
			"a/1+b/2", false, "identifier family given"},
		{"a shared identifier with two birth dates: vetoed, probable",
			[]rec{{ref: "a/1", family: "Ng", given: "Alma", birth: "1950-02-02", ids: []Identifier{ssn("123-45-6789")}}, {ref: "b/2", family: "Ng", given: "Alma", birth: "1951-07-09", ids: []Identifier{ssn("123-45-6789")}}},
			"a/1 b/2", true, "identifier family given"},
		{"day and month swapped, same name and phone: probable",
			[]rec{{ref: "a/1", family: "Okafor", given: "Chidi", birth: "1980-04-07", phone: "3125550100"}, {ref: "b/2", family: "Okafor", given: "Chidi", birth: "1980-07-04", phone: "312.555.0100"}},
			"a/1 b/2", true, "family given birthDate~ phone"},
		{"twins: one family, birth date, phone and address, other given names",
			[]rec{{ref: "a/1", family: "Lindqvist", given: "Johanna", birth: "2001-09-09", phone: "6085550111", line: "4 Lake Dr", postal: "53703"},
				{ref: "b/2", family: "Lindqvist", given: "Annika", birth: "2001-09-09", phone: "6085550111", line: "4 Lake Drive", postal: "53703"}},
			"a/1 b/2", true, "family birthDate phone address"},
		{"Jr and Sr: father and son",
			[]rec{{ref: "a/1", family: "Whitfield", given: "Harlan", suffix: "Sr", birth: "1950-05-05", phone: "6085550122", line: "7 Hill Ct", postal: "53703"},
				{ref: "b/2", family: "Whitfield Jr.", given: "Harlan", birth: "1950-05-05", phone: "6085550122", line: "7 Hill Court", postal: "53703"}},
			"a/1 b/2", true, "family given birthDate phone address"},
		{"a household: family, phone and address; neither given name nor birth date",
			[]rec{{ref: "a/1", family: "Moreau", given: "Celine", birth: "1975-11-30", phone: "4155550142", line: "20 Bay St", postal: "94133"},
				{ref: "b/2", family: "Moreau", given: "Luc", birth: "2008-02-14", phone: "415-555-0142", line: "20 Bay Street", postal: "94133"}},
			"a/1 b/2", false, ""},
		{"accents, case and spacing of names",
			[]rec{{ref: "a/1", family: "De La Peña", given: "José", birth: "1966-12-01", email: "JDLP@Example.org"}, {ref: "b/2", family: "dela pena", given: "JOSE", birth: "1966-12-01", email: "jdlp@example.org"}},
			"a/1+b/2", false, "family given birthDate email"},
		{"a short given name may not differ by a typo",
			[]rec{{ref: "a/1", family: "Kowalski", given: "Ana", birth: "1999-03-03", phone: "2175550000"}, {ref: "b/2", family: "Kowalski", given: "Ava", birth: "1999-03-03", phone: "2175550000"}},
			"a/1 b/2", true, "family birthDate phone"},
		{"no birth date: never certain by demographics",
			[]rec{{ref: "a/1", family: "Fairbanks", given: "Odile", phone: "2175550001", line: "3 Elm St", postal: "62701"}, {ref: "b/2", family: "Fairbanks", given: "Odile", birth: "1970-01-01", phone: "2175550001", line: "3 Elm St", postal: "62701"}},
			"a/1 b/2", true, "family given phone address"},
		{"no name: never certain by demographics",
			[]rec{{ref: "a/1", birth: "1970-01-01", phone: "2175550002"}, {ref: "b/2", family: "Gale", given: "Iris", birth: "1970-01-01", phone: "2175550002"}},
			"a/1 b/2", true, "birthDate phone"},
		{"a new family name: probable",
			[]rec{{ref: "a/1", family: "Hollis", given: "Bethany", birth: "1988-08-18", phone: "6175550100", email: "bh@example.org"}, {ref: "b/2", family: "Carver", given: "Bethany", birth: "1988-08-18", phone: "6175550100", email: "bh@example.org"}},
			"a/1 b/2", true, "given birthDate phone email"},
		{"a nickname: probable, never certain",
			[]rec{{ref: "a/1", family: "Osterberg", given: "William", birth: "1960-06-06", phone: "6175550101"}, {ref: "b/2", family: "Osterberg", given: "Bill", birth: "1960-06-06", phone: "6175550101"}},
			"a/1 b/2", true, "family given~ birthDate phone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			people := MatchPeople(patients(c.records...), nil)
			if got := groups(people); got != c.want {
				t.Fatalf("people %s, want %s", got, c.want)
			}
			if len(people) == 1 {
				m := people[0].Match
				if m == nil || m.Grade != Certain || strings.Join(m.Reasons, " ") != c.reasons || m.Score <= 0.5 || m.Score > 1 {
					t.Fatalf("match %+v, want certain with reasons %q", m, c.reasons)
				}
				if len(people[0].PossibleMatches) != 0 {
					t.Fatalf("possible matches %+v", people[0].PossibleMatches)
				}
				return
			}
			for i, p := range people {
				if p.Match != nil {
					t.Fatalf("a person of one record has match %+v", p.Match)
				}
				other := people[1-i]
				if !c.possible {
					if len(p.PossibleMatches) != 0 {
						t.Fatalf("possible matches %+v, want none", p.PossibleMatches)
					}
					continue
				}
				if len(p.PossibleMatches) != 1 || p.PossibleMatches[0].PersonID != other.ID ||
					strings.Join(p.PossibleMatches[0].Reasons, " ") != c.reasons || p.PossibleMatches[0].Score <= 0 || p.PossibleMatches[0].Score > 1 {
					t.Fatalf("possible matches %+v, want %s with reasons %q", p.PossibleMatches, other.ID, c.reasons)
				}
			}
		})
	}
}

// A record without a birth date must not join two people whose birth
// dates differ, however certain each pair is on its own.
func TestMatchPeople_ARecordWithoutBirthDateDoesNotBridgeTwoPeople(t *testing.T) {
	people := MatchPeople(patients(
		rec{ref: "a/1", family: "Adair", given: "Rowan", birth: "1970-01-01", ids: []Identifier{ssn("1")}},
		rec{ref: "b/1", family: "Adair", given: "Rowan", ids: []Identifier{ssn("1"), {System: "urn:x", Value: "7"}}},
		rec{ref: "c/1", family: "Adair", given: "Rowan", birth: "1982-02-02", ids: []Identifier{{System: "urn:x", Value: "7"}}},
	), nil)
	if got := groups(people); got != "a/1+b/1 c/1" && got != "a/1 b/1+c/1" {
		t.Fatalf("people %s", got)
	}
	var joined, alone *Person
	for i := range people {
		if len(people[i].Sources) == 2 {
			joined = &people[i]
		} else {
			alone = &people[i]
		}
	}
	if len(alone.PossibleMatches) != 1 || alone.PossibleMatches[0].PersonID != joined.ID {
		t.Fatalf("the pair kept apart by the veto is not shown: %+v", alone.PossibleMatches)
	}
}

func link(id string, d Decision, at time.Time, a, b string) PersonLink {
	sa, pa, _ := strings.Cut(a, "/")
	sb, pb, _ := strings.Cut(b, "/")
	return PersonLink{ID: id, Decision: d, CreatedAt: at, Records: [2]SourceRef{{sa, pa}, {sb, pb}}}
}

func TestMatchPeople_Links(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	certainPair := []rec{
		{ref: "a/1", family: "Quintero", given: "Marisabel", birth: "1984-06-02", phone: "2175550633"},
		{ref: "b/9", family: "Quintero", given: "Marisabel", birth: "1984-06-02", phone: "2175550633"},
	}
	vetoedPair := []rec{
		{ref: "a/1", family: "Ng", given: "Alma", birth: "1950-02-02"},
		{ref: "b/2", family: "Ng", given: "Alma", birth: "1951-07-09"},
	}
	threeOfOne := []rec{
		{ref: "a/1", family: "Iverson", given: "Petra", birth: "1977-07-07", phone: "2175550700"},
		{ref: "b/1", family: "Iverson", given: "Petra", birth: "1977-07-07", phone: "2175550700"},
		{ref: "c/1", family: "Iverson", given: "Petra", birth: "1977-07-07", phone: "2175550700"},
	}
	cases := []struct {
		name    string
		records []rec
		links   []PersonLink
		want    string
		grade   Grade
	}{
		{"different keeps a certain pair apart", certainPair,
			[]PersonLink{link("1", Different, t0, "a/1", "b/9")}, "a/1 b/9", ""},
		{"same merges against a veto", vetoedPair,
			[]PersonLink{link("1", Same, t0, "b/2", "a/1")}, "a/1+b/2", Confirmed},
		{"the newer of two links on one pair wins: same", vetoedPair,
			[]PersonLink{link("1", Different, t0, "a/1", "b/2"), link("2", Same, t0.Add(time.Second), "a/1", "b/2")}, "a/1+b/2", Confirmed},
		{"the newer of two links on one pair wins: different", certainPair,
			[]PersonLink{link("2", Different, t0.Add(time.Second), "a/1", "b/9"), link("1", Same, t0, "a/1", "b/9")}, "a/1 b/9", ""},
		{"a newer same chain wins over an older different", vetoedPair[:1],
			nil, "a/1", ""},
		{"different splits one record off three", threeOfOne,
			[]PersonLink{link("1", Different, t0, "a/1", "c/1"), link("2", Different, t0, "b/1", "c/1")}, "a/1+b/1 c/1", Certain},
		{"a link of records not in the answer changes nothing", certainPair,
			[]PersonLink{link("1", Different, t0, "a/1", "z/1")}, "a/1+b/9", Certain},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			people := MatchPeople(patients(c.records...), NewLinkSet(c.links))
			if got := groups(people); got != c.want {
				t.Fatalf("people %s, want %s", got, c.want)
			}
			for _, p := range people {
				if len(p.Sources) > 1 && (p.Match == nil || p.Match.Grade != c.grade) {
					t.Fatalf("match %+v, want grade %s", p.Match, c.grade)
				}
				if len(p.Sources) > 1 && c.grade == Confirmed && (p.Match.Reasons[0] != "link" || p.Match.Score != 1) {
					t.Fatalf("confirmed match %+v", p.Match)
				}
				for _, pm := range p.PossibleMatches {
					for _, l := range c.links {
						if l.Decision == Different && strings.Contains(groups(people), l.Records[0].Source+"/"+l.Records[0].PatientID) {
							t.Fatalf("people kept apart by a link list each other: %+v", pm)
						}
					}
				}
			}
		})
	}
}

func TestMatchPeople_IDsAndOrderDoNotDependOnTheRecordsOrder(t *testing.T) {
	rs := patients(
		rec{ref: "a/1", family: "Smith", given: "Zoe", birth: "2000-01-01", phone: "2175551111"},
		rec{ref: "b/1", family: "smith", given: "zoe", birth: "2000-01-01", phone: "217 555 1111"},
		rec{ref: "a/2", family: "Smith", given: "Amy", birth: "2001-01-01"},
		rec{ref: "a/3", family: "Smith", given: "Amy", birth: "1999-01-01"},
		rec{ref: "a/4", family: "Brown", given: "Xi"},
	)
	first := MatchPeople(rs, nil)
	reversed := slices.Clone(rs)
	slices.Reverse(reversed)
	second := MatchPeople(reversed, nil)
	var order []string
	for i, p := range first {
		order = append(order, p.Sources[0].PatientID)
		if p.ID != second[i].ID {
			t.Fatalf("person %d: id %s, then %s", i, p.ID, second[i].ID)
		}
	}
	if got := strings.Join(order, ","); got != "4,3,2,1" {
		t.Fatalf("order %s, want Brown, Smith Amy (1999, 2001), Smith Zoe", got)
	}
}

func TestNationalPhone(t *testing.T) {
	for in, want := range map[string]string{
		"+1-217-555-0633":   "2175550633",
		"(217) 555-0633":    "2175550633",
		"217.555.0633":      "2175550633",
		"1 217 555 0633":    "2175550633",
		"217-555-0633 x12":  "2175550633",
		"+44 20 7946 0958":  "+442079460958",
		"+49 30 901820":     "+4930901820",
		"555-0633":          "",
		"call me":           "",
		"+1 (217) 555-0633": "2175550633",
	} {
		if got := NationalPhone(in); got != want {
			t.Errorf("NationalPhone(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTraits_Normalise(t *testing.T) {
	cases := []struct {
		in   Patient
		want string
	}{
		{Patient{Name: HumanName{Family: "O'Brien-Smith", Given: []string{"Mary Ann"}}}, "obriensmith maryann mary -"},
		{Patient{Name: HumanName{Family: "Smith Jr.", Given: []string{"John"}}}, "smith john john jr"},
		{Patient{Name: HumanName{Family: "Smith", Given: []string{"John", "III"}}}, "smith john john iii"},
		{Patient{Name: HumanName{Family: "Łukasz-Ørsted", Given: []string{"Zoë"}}}, "lukaszorsted zoe zoe -"},
		{Patient{Name: HumanName{Text: "Ana María Gómez"}}, "gomez ana ana -"},
	}
	for _, c := range cases {
		tr := newNormaliser(1).traitsOf(c.in)
		got := fmt.Sprintf("%s %s %s %s", tr.family, tr.given, tr.givenFirst, cmpOr(tr.suffix, "-"))
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c.in.Name, got, c.want)
		}
	}
	n := newNormaliser(1)
	a := string(n.appendAddressKey(nil, Address{Line: []string{"12 North Elm Street, Apartment 4"}, PostalCode: "62701-1234"}))
	b := string(n.appendAddressKey(nil, Address{Line: []string{"12 N. Elm St Apt 4"}, PostalCode: "62701"}))
	if a != b || a != "12 n elm st apt 4|62701" {
		t.Errorf("addresses %q and %q", a, b)
	}
}

func cmpOr(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func TestCompareBirth(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want level
	}{
		{"1980-02-01", "1980-02-01", exact},
		{"1980-02-01", "1980-01-02", approx}, // day and month swapped
		{"1980-02-01", "1980-02-07", approx}, // one digit
		{"1980-02-13", "1980-02-31", approx}, // neighbours swapped
		{"1980-02-01", "1981-03-01", disagree},
		{"1980-02-01", "", missing},
	} {
		if got := compareBirth(c.a, c.b); got != c.want {
			t.Errorf("compareBirth(%s, %s) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// Answers are matched at once by concurrent searches: normalising accented
// names shares nothing between them (go test -race).
func TestMatchPeople_ConcurrentAnswersShareNoState(t *testing.T) {
	records := patients(
		rec{ref: "a/1", family: "Gómez-Peña", given: "Zoë", birth: "1980-02-01", phone: "2175550111"},
		rec{ref: "b/1", family: "Gomez Pena", given: "Zoe", birth: "1980-02-01", phone: "217-555-0111"},
	)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if got := groups(MatchPeople(records, nil)); got != "a/1+b/1" {
					t.Errorf("people %s", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestCompareLower_IsToLowersOrder(t *testing.T) {
	words := []string{"", "a", "A", "ab", "Ab", "aB", "b", "Z", "z", "López", "LÓPEZ", "lopez", "Lopes", "Æsir", "smith", "Smith-Jones", "smith jones", "ß"}
	for _, a := range words {
		for _, b := range words {
			want := strings.Compare(strings.ToLower(a), strings.ToLower(b))
			if got := compareLower(a, b); (got < 0) != (want < 0) || (got == 0) != (want == 0) {
				t.Errorf("compareLower(%q, %q) = %d, want %d", a, b, got, want)
			}
		}
	}
}

// The prefilter before the library never refuses a pair one edit apart.
func TestOneTypo(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"marisabel", "marisabell", true}, {"marisabel", "marisbel", true}, {"marisabel", "marisaebl", true},
		{"marisabel", "marixabel", true}, {"jose", "jsoe", false}, {"lopez", "lopes", true},
		{"lópez", "lopez", true}, {"johanna", "annika", false}, {"abcdefgh", "abcxyzgh", false},
		{"abcde", "abcde", false}, {"abcdefgh", "bacdefgh", true}, {"abcdefgh", "abcdefhg", true},
	} {
		if got := oneTypo(c.a, c.b); got != c.want {
			t.Errorf("oneTypo(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

// The person id's hash is hash/fnv's FNV-1a of 128 bits, written over
// strings: ids stay those of earlier builds.
func TestFNV1a128_SameAsHashFNV(t *testing.T) {
	for _, in := range []string{"", "a", "ehr-a\x00pat-1\x00", "Ørsted\xff", strings.Repeat("x", 300)} {
		want := fnv.New128a()
		want.Write([]byte(in))
		h := fnv1a128{fnvOffset128Hi, fnvOffset128Lo}
		h.write(in)
		got := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, h.hi), h.lo)
		if !bytes.Equal(got, want.Sum(nil)) {
			t.Errorf("%q: %x, want %x", in, got, want.Sum(nil))
		}
	}
}
