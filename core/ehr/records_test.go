package ehr

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

var (
	loincGlucose = Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}
	loincHbA1c   = Coding{System: "http://loinc.org", Code: "4548-4", Display: "HbA1c"}
)

// people maps every patient id to a person: pa-* and pb-* to "ana", pz-* to "zoe".
func people(_, patientID string) string {
	switch {
	case strings.HasPrefix(patientID, "pa"), strings.HasPrefix(patientID, "pb"):
		return "ana"
	case strings.HasPrefix(patientID, "pz"):
		return "zoe"
	}
	return ""
}

func obs(id, patient, date string, code Coding) Record {
	return Record{Type: TypeObservation, ID: id, PatientID: patient, Date: date, Code: code, Status: "final"}
}

// sourcesOf lists an item's sources as "source/recordId".
func sourcesOf(it RecordItem) []string {
	var out []string
	for _, s := range it.Sources {
		out = append(out, s.Source+"/"+s.RecordID)
	}
	return out
}

func TestMergeRecords(t *testing.T) {
	for _, tt := range []struct {
		name string
		a, b []Record
		want [][]string // each item's sources, in the items' order
	}{
		{"same record in two systems",
			[]Record{obs("a1", "pa1", "2024-03-01T08:00:00Z", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01", loincGlucose)},
			[][]string{{"A/a1", "B/b1"}}},
		{"same day as written, different instants and offsets",
			[]Record{obs("a1", "pa1", "2024-03-01T23:30:00-05:00", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01T01:00:00+02:00", loincGlucose)},
			[][]string{{"A/a1", "B/b1"}}},
		{"same code, another day",
			[]Record{obs("a1", "pa1", "2024-03-01", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-02", loincGlucose)},
			[][]string{{"B/b1"}, {"A/a1"}}},
		{"same day, another code",
			[]Record{obs("a1", "pa1", "2024-03-01", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01", loincHbA1c)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"another person",
			[]Record{obs("a1", "pa1", "2024-03-01", loincGlucose)},
			[]Record{obs("b1", "pz1", "2024-03-01", loincGlucose)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"unknown person never merged",
			[]Record{obs("a1", "xx1", "2024-03-01", loincGlucose)},
			[]Record{obs("b1", "xx1", "2024-03-01", loincGlucose)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"undated never merged",
			[]Record{obs("a1", "pa1", "", loincGlucose)},
			[]Record{obs("b1", "pb1", "", loincGlucose)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"malformed date never merged",
			[]Record{obs("a1", "pa1", "yesterday", loincGlucose)},
			[]Record{obs("b1", "pb1", "yesterday", loincGlucose)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"no code never merged",
			[]Record{obs("a1", "pa1", "2024-03-01", Coding{})},
			[]Record{obs("b1", "pb1", "2024-03-01", Coding{})},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"a code without its system never merged",
			[]Record{obs("a1", "pa1", "2024-03-01", Coding{Code: "2345-7"})},
			[]Record{obs("b1", "pb1", "2024-03-01", Coding{Code: "2345-7"})},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"same partial date merged",
			[]Record{obs("a1", "pa1", "2024-03", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03", loincGlucose)},
			[][]string{{"A/a1", "B/b1"}}},
		{"partial date not merged with a day",
			[]Record{obs("a1", "pa1", "2024-03", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01", loincGlucose)},
			[][]string{{"A/a1"}, {"B/b1"}}},
		{"another type never merged",
			[]Record{obs("a1", "pa1", "2024-03-01", loincGlucose)},
			[]Record{{Type: TypeDiagnosticReport, ID: "b1", PatientID: "pb1", Date: "2024-03-01", Code: loincGlucose}},
			[][]string{{"B/b1"}, {"A/a1"}}}, // diagnostic_report before observation
		{"one system's records are never merged with each other",
			[]Record{obs("a2", "pa1", "2024-03-01T18:00:00Z", loincGlucose), obs("a1", "pa1", "2024-03-01T08:00:00Z", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01T08:00:00Z", loincGlucose)},
			[][]string{{"A/a2"}, {"A/a1", "B/b1"}}},
		{"two in each system pair by time",
			[]Record{obs("a2", "pa1", "2024-03-01T18:00:00Z", loincGlucose), obs("a1", "pa1", "2024-03-01T08:00:00Z", loincGlucose)},
			[]Record{obs("b1", "pb1", "2024-03-01T08:00:00Z", loincGlucose), obs("b2", "pb1", "2024-03-01T18:00:00Z", loincGlucose)},
			[][]string{{"A/a2", "B/b2"}, {"A/a1", "B/b1"}}},
		{"a record answered twice is taken once",
			[]Record{obs("a1", "pa1", "2024-03-01", loincGlucose), obs("a1", "pa1", "2024-03-01", loincGlucose)},
			nil,
			[][]string{{"A/a1"}}},
		{"newest first, undated last, then type, then id",
			[]Record{
				obs("a-undated", "pa1", "", loincGlucose),
				obs("a-2023", "pa1", "2023", loincGlucose),
				obs("a-mar1", "pa1", "2024-03-01", loincHbA1c),
				obs("a-late", "pa1", "2024-03-01T23:30:00-05:00", loincGlucose),          // 2024-03-02T04:30Z
				{Type: TypeCondition, ID: "a-bad", PatientID: "pa1", Date: "2024-13-01"}, // undated: before the undated observation
			},
			[]Record{
				obs("b-mar2", "pb1", "2024-03-02T01:00:00Z", loincGlucose),
				{Type: TypeCondition, ID: "b-cond", PatientID: "pb1", Date: "2024-03"}, // as 2024-03-01
			},
			[][]string{{"A/a-late"}, {"B/b-mar2"}, {"B/b-cond"}, {"A/a-mar1"}, {"A/a-2023"}, {"A/a-bad"}, {"A/a-undated"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			items := MergeRecords([]SourceRecords{{"A", tt.a}, {"B", tt.b}}, people)
			var got [][]string
			for _, it := range items {
				got = append(got, sourcesOf(it))
			}
			if !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMergeRecordsUndatedTieBreaks(t *testing.T) {
	// Records that tie on date are ordered by type, then by id.
	recs := []Record{
		obs("o2", "pa1", "", loincGlucose), obs("o1", "pa1", "", loincGlucose),
		{Type: TypeAllergyIntolerance, ID: "x", PatientID: "pa1"},
		{Type: TypeEncounter, ID: "e", PatientID: "pa1", Date: "2024-03-01"},
		{Type: TypeCondition, ID: "c", PatientID: "pa1", Date: "2024-03-01T00:00:00Z"},
	}
	items := MergeRecords([]SourceRecords{{"A", recs}}, people)
	var types []ClinicalType
	for _, it := range items {
		types = append(types, it.Type)
	}
	want := []ClinicalType{TypeCondition, TypeEncounter, TypeAllergyIntolerance, TypeObservation, TypeObservation}
	if !slices.Equal(types, want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	if items[3].ID >= items[4].ID {
		t.Errorf("ties not ordered by id: %s, %s", items[3].ID, items[4].ID)
	}
}

func TestMergeRecordsItem(t *testing.T) {
	size := int64(1024)
	early, late := time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC), time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	a := Record{Type: TypeObservation, ID: "a1", PatientID: "pa1", Date: "2024-03-01T08:00:00Z",
		Code: Coding{System: loincGlucose.System, Code: loincGlucose.Code}, LastUpdated: early}
	b := Record{Type: TypeObservation, ID: "b1", PatientID: "pb1", Date: "2024-03-01", Status: "final",
		Code: loincGlucose, Text: "Glucose", Value: &RecordValue{Quantity: &Quantity{Value: "5.4", Unit: "mmol/L"}},
		Attachment: &Attachment{Title: "t", Size: &size}, LastUpdated: late}
	items := MergeRecords([]SourceRecords{{"A", []Record{a}}, {"B", []Record{b}}}, people)
	if len(items) != 1 {
		t.Fatalf("%d items, want 1", len(items))
	}
	it := items[0]
	want := []RecordSource{{"A", "a1", "pa1"}, {"B", "b1", "pb1"}}
	if !slices.Equal(it.Sources, want) {
		t.Errorf("sources %v, want %v", it.Sources, want)
	}
	if it.Type != TypeObservation || it.PersonID != "ana" || it.Date != a.Date || it.Status != "final" || it.Code != loincGlucose ||
		it.Text != "Glucose" || it.Value != b.Value || it.Attachment != b.Attachment || !it.LastUpdated.Equal(late) || len(it.ID) != 24 {
		t.Errorf("item %+v: want the first source's fields, blanks filled from the second, the latest update", it)
	}

	single := MergeRecords([]SourceRecords{{"A", []Record{obs("a9", "xx9", "", Coding{})}}}, people)[0]
	if single.PersonID != "" || single.Date != "" || len(single.Sources) != 1 {
		t.Errorf("unmerged item %+v", single)
	}
}

func TestMergeRecordsStableIDs(t *testing.T) {
	a := []Record{obs("a1", "pa1", "2024-03-01", loincGlucose), obs("a2", "pa1", "", loincGlucose), obs("a3", "pa1", "2024-01-05", loincHbA1c)}
	b := []Record{obs("b1", "pb1", "2024-03-01T10:00:00+01:00", loincGlucose), obs("b2", "pz1", "2024-01-05", loincHbA1c)}
	ids := func(items []RecordItem) map[string]string { // sorted sources → id
		m := map[string]string{}
		for _, it := range items {
			s := sourcesOf(it)
			slices.Sort(s)
			m[fmt.Sprint(s)] = it.ID
		}
		return m
	}
	first := MergeRecords([]SourceRecords{{"A", a}, {"B", b}}, people)
	again := MergeRecords([]SourceRecords{{"A", a}, {"B", b}}, people)
	if !slices.EqualFunc(first, again, func(x, y RecordItem) bool { return x.ID == y.ID }) {
		t.Error("ids or order differ across calls")
	}
	rev := func(r []Record) []Record { r = slices.Clone(r); slices.Reverse(r); return r }
	swapped := MergeRecords([]SourceRecords{{"B", rev(b)}, {"A", rev(a)}}, people)
	if got, want := ids(swapped), ids(first); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ids depend on input order: %v, want %v", got, want)
	}
	seen := map[string]bool{}
	for _, it := range first {
		if seen[it.ID] {
			t.Errorf("duplicate id %s", it.ID)
		}
		seen[it.ID] = true
	}
	// The same record id in another type is another record.
	o := MergeRecords([]SourceRecords{{"A", []Record{{Type: TypeObservation, ID: "1"}}}}, people)
	c := MergeRecords([]SourceRecords{{"A", []Record{{Type: TypeCondition, ID: "1"}}}}, people)
	if o[0].ID == c[0].ID {
		t.Error("an Observation and a Condition with the same id share an item id")
	}
}

func TestCompareRecordDates(t *testing.T) {
	// Each date sorts strictly before the next (newest first).
	order := []string{
		"2025",
		"2024-03-02T04:31:00Z",
		"2024-03-01T23:30:00-05:00", // 2024-03-02T04:30Z
		"2024-03-02T01:00:00.5+00:00",
		"2024-03-02",
		"2024-03-01T12:00:00", // no offset: read as UTC
		"2024-03-01T08:00:00Z",
		"2024-02-29",
		"2024-02",
		"2023-12-31T23:59:59-14:00",
		"",
	}
	for i := 0; i+1 < len(order); i++ {
		if c := compareRecordDates(order[i], order[i+1]); c >= 0 {
			t.Errorf("compare(%q, %q) = %d, want < 0", order[i], order[i+1], c)
		}
		if c := compareRecordDates(order[i+1], order[i]); c <= 0 {
			t.Errorf("compare(%q, %q) = %d, want > 0", order[i+1], order[i], c)
		}
	}
	for _, eq := range [][2]string{
		{"2024-03", "2024-03-01"}, // a partial date as its first day
		{"2024", "2024-01-01T00:00:00Z"},
		{"2024-03-01T10:00:00+01:00", "2024-03-01T09:00:00Z"},
		{"", "not a date"}, // both undated
	} {
		if c := compareRecordDates(eq[0], eq[1]); c != 0 {
			t.Errorf("compare(%q, %q) = %d, want 0", eq[0], eq[1], c)
		}
	}
}

func TestParseRecordDate(t *testing.T) {
	for _, tt := range []struct {
		in          string
		written     string
		first, last Date
	}{
		{"2024", "2024", Date{2024, 1, 1}, Date{2024, 12, 31}},
		{"2024-02", "2024-02", Date{2024, 2, 1}, Date{2024, 2, 29}},
		{"2023-02", "2023-02", Date{2023, 2, 1}, Date{2023, 2, 28}},
		{"2024-03-01", "2024-03-01", Date{2024, 3, 1}, Date{2024, 3, 1}},
		{"2024-03-01T23:30:00-05:00", "2024-03-01", Date{2024, 3, 1}, Date{2024, 3, 1}},
		{"2024-03-01T23:30:00.123456Z", "2024-03-01", Date{2024, 3, 1}, Date{2024, 3, 1}},
		{"2024-03-01T23:30:00", "2024-03-01", Date{2024, 3, 1}, Date{2024, 3, 1}},
	} {
		d, ok := parseRecordDate(tt.in)
		if !ok || d.written != tt.written || d.first != tt.first || d.last != tt.last {
			t.Errorf("%q: %+v %v, want %s %v–%v", tt.in, d, ok, tt.written, tt.first, tt.last)
		}
	}
	for _, bad := range []string{"", "24", "202", "20x4", "2024-", "2024-1", "2024-00", "2024-13", "2023-02-29",
		"2024-03-32", "2024-03-00", "2024-3-01", "2024/03/01", "2024-03-01T", "2024-03-01T25:00:00Z",
		"2024-03-01T10:00Z", "2024-03-01 10:00:00Z", "2024-03-01T10:00:00+0500", "2024-03T10:00:00Z",
		" 2024-03-01", "2024-03-01x", "yesterday", "-2024", "+024-03-01"} {
		if d, ok := parseRecordDate(bad); ok {
			t.Errorf("%q read as %+v, want malformed", bad, d)
		}
	}
}

func TestInDateRange(t *testing.T) {
	mar1, mar31 := Date{2024, 3, 1}, Date{2024, 3, 31}
	for _, tt := range []struct {
		date     string
		from, to Date
		want     bool
	}{
		// No range: everything kept, undated and malformed too.
		{"2024-03-01", Date{}, Date{}, true},
		{"", Date{}, Date{}, true},
		{"garbage", Date{}, Date{}, true},
		// Boundaries inclusive by calendar day.
		{"2024-03-01", mar1, mar31, true},
		{"2024-03-31", mar1, mar31, true},
		{"2024-02-29", mar1, mar31, false},
		{"2024-04-01", mar1, mar31, false},
		{"2024-03-31T23:59:59.999Z", mar1, mar31, true},
		{"2024-03-01T00:00:00Z", mar1, mar31, true},
		// The day as written, in the date's own offset.
		{"2024-03-01T23:30:00-05:00", mar1, mar1, true},                // 2024-03-02 in UTC
		{"2024-03-01T23:30:00-05:00", Date{2024, 3, 2}, Date{}, false}, // not on the UTC day
		{"2024-03-02T01:00:00+05:00", Date{2024, 3, 2}, Date{2024, 3, 2}, true},
		{"2024-02-29T23:30:00-05:00", mar1, mar31, false},
		// One side open.
		{"1999-01-01", Date{}, mar31, true},
		{"2099-01-01", Date{}, mar31, false},
		{"2099-01-01", mar1, Date{}, true},
		{"1999-01-01", mar1, Date{}, false},
		// Partial dates: kept when any of their days is in the range.
		{"2024-03", Date{2024, 3, 15}, Date{2024, 3, 15}, true},
		{"2024-03", Date{2024, 3, 31}, Date{2024, 4, 30}, true},
		{"2024-03", Date{2024, 1, 1}, Date{2024, 3, 1}, true},
		{"2024-03", Date{2024, 4, 1}, Date{2024, 4, 30}, false},
		{"2024-03", Date{2024, 2, 1}, Date{2024, 2, 29}, false},
		{"2024", Date{2024, 12, 31}, Date{2025, 1, 1}, true},
		{"2024", Date{2023, 1, 1}, Date{2023, 12, 31}, false},
		{"2024", Date{2025, 1, 1}, Date{}, false},
		// Undated or malformed: left out under a range.
		{"", mar1, mar31, false},
		{"", Date{}, mar31, false},
		{"2024-03-15T10:00", mar1, mar31, false},
		{"2024-02-30", mar1, mar31, false},
		{"March 2024", mar1, mar31, false},
	} {
		if got := InDateRange(tt.date, tt.from, tt.to); got != tt.want {
			t.Errorf("InDateRange(%q, %v, %v) = %v, want %v", tt.date, tt.from, tt.to, got, tt.want)
		}
	}
}

// FuzzInDateRange checks that no date string panics, and that
// InDateRange agrees with a plain oracle: without a range everything is
// kept; a full date or dateTime is kept when its written day, as text, is
// within the range's days as text; anything time.Parse cannot read as a
// FHIR date or dateTime is left out under a range.
func FuzzInDateRange(f *testing.F) {
	for _, s := range []string{"", "2024", "2024-03", "2024-03-01", "2024-03-01T23:30:00-05:00",
		"2024-03-01T10:00:00Z", "2024-03-01T10:00:00.5+14:00", "2024-02-30", "x"} {
		f.Add(s, int32(8825), int32(8855), true, true) // days after 2000-01-01: 2024-03-01, 2024-03-31
	}
	f.Fuzz(func(t *testing.T, s string, fromDays, toDays int32, hasFrom, hasTo bool) {
		day := func(n int32, has bool) Date {
			if !has {
				return Date{}
			}
			d := time.Date(2000, 1, 1+int(n%40000), 0, 0, 0, 0, time.UTC)
			return Date{d.Year(), d.Month(), d.Day()}
		}
		from, to := day(fromDays, hasFrom), day(toDays, hasTo)
		got := InDateRange(s, from, to)
		if !hasFrom && !hasTo {
			if !got {
				t.Fatalf("%q left out without a range", s)
			}
			return
		}
		text := func(d Date) string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day) }
		full := false
		if len(s) >= 10 {
			if _, err := time.Parse("2006-01-02", s[:10]); err == nil {
				_, err1 := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
				_, err2 := time.Parse("2006-01-02T15:04:05.999999999", s)
				full = len(s) == 10 || err1 == nil || err2 == nil
			}
		}
		if full {
			want := (!hasFrom || text(from) <= s[:10]) && (!hasTo || s[:10] <= text(to))
			if got != want {
				t.Fatalf("InDateRange(%q, %v, %v) = %v, want %v", s, from, to, got, want)
			}
			return
		}
		readable := false
		for _, layout := range []string{"2006", "2006-01"} {
			if _, err := time.Parse(layout, s); err == nil && len(s) == len(layout) {
				readable = true
			}
		}
		if got && !readable {
			t.Fatalf("InDateRange(%q, %v, %v) kept a malformed date", s, from, to)
		}
	})
}

func TestCheckRecordSearch(t *testing.T) {
	for _, tt := range []struct {
		scopes string
		typ    ClinicalType
		ok     bool
	}{
		{"user/Observation.rs", TypeObservation, true},
		{"user/Observation.s", TypeObservation, true},
		{"system/*.rs", TypeDocumentReference, true},
		{"system/MedicationRequest.read", TypeMedicationRequest, true},
		{"user/*.cruds", TypeAllergyIntolerance, true},
		{"user/Observation.r", TypeObservation, false},                      // read without search
		{"patient/Observation.rs", TypeObservation, false},                  // a patient may not search others
		{"patient/*.rs", TypeCondition, false},                              // nor with a wildcard
		{"user/Observation.rs", TypeCondition, false},                       // another type
		{"user/Patient.rs", TypeEncounter, false},                           // people, not records
		{"user/Observation.rs?category=laboratory", TypeObservation, false}, // a narrowed scope
		{"openid profile", TypeProcedure, false},
		{"", TypeImmunization, false},
	} {
		err := checkRecordSearch(actorWith(tt.scopes), tt.typ)
		if (err == nil) != tt.ok {
			t.Errorf("%q %s: %v, want allowed %v", tt.scopes, tt.typ, err, tt.ok)
		}
		var e *core.Error
		want := "user/" + string(tt.typ) + ".rs"
		if err != nil && (!errors.As(err, &e) || e.Code != "insufficient_scope" || e.Scope != want || e.Kind != core.KindForbidden) {
			t.Errorf("%q %s: %#v, want insufficient_scope naming %s", tt.scopes, tt.typ, err, want)
		}
	}
}

func TestSortRecordItemsAgreesWithCompare(t *testing.T) {
	dates := []string{"", "x", "2024", "2024-03", "2024-03-01", "2024-03-01T23:30:00-05:00", "2024-03-02T04:30:00Z", "2023-12-31"}
	var items []RecordItem
	for i, d := range dates {
		for _, typ := range []ClinicalType{TypeObservation, TypeCondition} {
			items = append(items, RecordItem{ID: fmt.Sprintf("id%02d", len(dates)-i), Type: typ, Date: d})
		}
	}
	sortRecordItems(items)
	if !slices.IsSortedFunc(items, compareRecordItems) {
		t.Errorf("not in compareRecordItems' order: %+v", items)
	}
	// Many, of every type, on few instants: ties broken by type, then id;
	// every item kept once.
	items = items[:0]
	for i := range 300 {
		items = append(items, RecordItem{ID: fmt.Sprintf("id%03d", (i*7919)%300), Type: ClinicalTypes[i%len(ClinicalTypes)], Date: dates[i%len(dates)]})
	}
	sortRecordItems(items)
	if !slices.IsSortedFunc(items, compareRecordItems) {
		t.Errorf("300 items not in compareRecordItems' order")
	}
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.ID+string(it.Type)] = true
	}
	if len(seen) != 300 {
		t.Errorf("%d distinct items after the sort, want 300", len(seen))
	}
}

// BenchmarkMergeRecords merges three systems' 500 observations of one
// person, 200 of them held by all three (the shape of test/bench's
// BenchmarkRecords): the CPU a cold record search spends after its last
// page, before it answers.
func BenchmarkMergeRecords(b *testing.B) {
	codes := []Coding{loincGlucose, loincHbA1c, {System: "http://loinc.org", Code: "2160-0", Display: "Creatinine"}}
	start := time.Date(2022, 1, 3, 8, 0, 0, 0, time.FixedZone("", -6*3600))
	var sets []SourceRecords
	for sys := range 3 {
		set := SourceRecords{Source: fmt.Sprint("ehr", sys)}
		for k := range 500 {
			day, code := k*5, codes[k%len(codes)]
			if k >= 200 {
				day, code = (k*37+sys*11)%1095, codes[(k+sys)%len(codes)]
			}
			r := obs(fmt.Sprintf("obs-%d-%d", sys, k), fmt.Sprint("pa-", sys), start.AddDate(0, 0, day).Format(time.RFC3339), code)
			r.Value = &RecordValue{Quantity: &Quantity{Value: "5.4", Unit: "mmol/L"}}
			set.Records = append(set.Records, r)
		}
		sets = append(sets, set)
	}
	var n int
	for b.Loop() {
		n = len(MergeRecords(sets, people))
	}
	b.ReportMetric(float64(n), "items")
}
