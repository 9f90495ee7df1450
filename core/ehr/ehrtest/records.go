package ehrtest

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The record search contract (ehr.RecordSearcher), in the manner of
// TestScheduler. An adapter's test calls TestRecordSearcher with a function
// that returns a backend for each subtest:
//
//	ehrtest.TestRecordSearcher(t, func(t *testing.T) ehrtest.RecordBackend {
//		srv := wsbottest.Start(t)
//		return ehrtest.RecordBackend{Searcher: newClient(t, srv.URL()), NoAttachment: true,
//			AddPatient: func(*testing.T) string { return ehrtest.NewID() },
//			AddRecords: func(t *testing.T, seeds []ehrtest.SeedRecord) []string { … srv.AddRecord(s.Record) … }}
//	})
//
// Every subtest seeds its own people, so a backend that shares its server
// with earlier subtests passes as well as an empty one. What the suite pins
// down, beyond the port's comment:
//   - every field the contract names comes back as seeded, for each of the
//     nine types: the date as written, status (the clinicalStatus code of a
//     Condition or AllergyIntolerance), the first coding, the text, an
//     Observation's value (a quantity's decimal as written, or a string),
//     a DocumentReference's attachment contentType, title and size — and
//     never the document's content or address;
//   - a date range never loses a record whose clinical date (the contract's
//     rule per type, its fallbacks included: a Condition dated only by
//     recordedDate, an Observation only by issued) falls in it, inclusive
//     by the day as written; records outside it may come back (the core
//     filters again), never one of another person or another type;
//   - paging is followed to the end: more records than the largest page
//     the adapters ask for (100) come back, each exactly once;
//   - no records is an empty, non-nil slice.

// RecordBackend is one RecordSearcher under test with a way to seed it.
type RecordBackend struct {
	Searcher ehr.RecordSearcher
	// AddPatient creates a person the backend can hold records of and
	// returns the id the Searcher knows them by (NewID, for a backend
	// without patients of its own).
	AddPatient func(t *testing.T) string
	// AddRecords stores the records, each of its Type and PatientID (an
	// id from AddPatient) with the fields the contract names as given (ID
	// and LastUpdated are the backend's to choose), and returns their ids
	// in the same order.
	AddRecords func(t *testing.T, seeds []SeedRecord) []string
	// NoAttachment says the backend's records carry no attachment (a
	// bot's records.search items have none): the suite then expects none.
	NoAttachment bool
}

// DatedBy says which element of the contract's date rule holds a seeded
// record's date. Backends whose records carry a single date (a bot)
// ignore it.
type DatedBy int

const (
	// DatedByMain: the rule's first element, a dateTime (Encounter
	// period.start, Condition onsetDateTime, Observation and
	// DiagnosticReport effectiveDateTime, MedicationRequest authoredOn,
	// AllergyIntolerance recordedDate, Immunization occurrenceDateTime,
	// Procedure performedDateTime, DocumentReference date).
	DatedByMain DatedBy = iota
	// DatedByPeriod: the Period form of the first element where the type
	// has one (Condition onsetPeriod.start, Observation and
	// DiagnosticReport effectivePeriod.start, Procedure
	// performedPeriod.start); the other types as DatedByMain.
	DatedByPeriod
	// DatedByFallback: the element the rule falls back to, the first one
	// left out (Condition recordedDate, Observation and DiagnosticReport
	// issued, AllergyIntolerance onsetDateTime, DocumentReference
	// context.period.start); the other types as DatedByMain.
	DatedByFallback
)

// SeedRecord is a record to seed and how its resource is written.
type SeedRecord struct {
	ehr.Record
	DatedBy DatedBy
	// Content is a DocumentReference's document. A backend that holds
	// documents stores it (FHIR: attachment.data, and an attachment.url
	// that names it); the searcher must never return it or its address.
	Content string
}

// NewID returns a fresh random id (for a backend's patients without a
// store of their own).
func NewID() string { return "pat-" + randomTag() }

// TestRecordSearcher runs the RecordSearcher contract against backends
// made by newBackend, which is called once for every subtest.
func TestRecordSearcher(t *testing.T, newBackend func(t *testing.T) RecordBackend) {
	t.Helper()
	s := recordSuite{newBackend: newBackend}
	t.Run("EachTypeReturnsTheContractFields", s.fields)
	t.Run("DateRangeKeepsEveryRecordDatedInIt", s.dateRange)
	t.Run("OtherPeopleAndTypesAreNeverReturned", s.isolation)
	t.Run("PagingIsFollowedToTheEnd", s.paging)
	t.Run("NoRecordsIsAnEmptySlice", s.none)
}

type recordSuite struct {
	newBackend func(t *testing.T) RecordBackend
}

// recordEnv is one subtest's backend and context.
type recordEnv struct {
	t   *testing.T
	b   RecordBackend
	ctx context.Context
}

func (s recordSuite) setup(t *testing.T) *recordEnv {
	t.Helper()
	b := s.newBackend(t)
	if b.Searcher == nil || b.AddPatient == nil || b.AddRecords == nil {
		t.Fatal("ehrtest: the backend needs a Searcher, AddPatient and AddRecords")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return &recordEnv{t: t, b: b, ctx: ctx}
}

func (e *recordEnv) patient() string {
	e.t.Helper()
	id := e.b.AddPatient(e.t)
	if id == "" {
		e.t.Fatal("AddPatient returned an empty id")
	}
	return id
}

// seed stores seeds and returns their ids, which must be set and distinct.
func (e *recordEnv) seed(seeds ...SeedRecord) []string {
	e.t.Helper()
	ids := e.b.AddRecords(e.t, seeds)
	if len(ids) != len(seeds) {
		e.t.Fatalf("AddRecords returned %d ids for %d records", len(ids), len(seeds))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if id == "" || seen[id] {
			e.t.Fatalf("AddRecords returned the ids %q: want distinct, non-empty ids", ids)
		}
		seen[id] = true
	}
	return ids
}

// search runs q, which must succeed with a non-nil result, and checks that
// every record is of q's type and person, and comes once.
func (e *recordEnv) search(q ehr.RecordQuery) []ehr.Record {
	e.t.Helper()
	got, err := e.b.Searcher.SearchRecords(e.ctx, q)
	if err != nil {
		e.t.Fatalf("SearchRecords(%s of %s, %v–%v): %v", q.Type, q.PatientID, q.From, q.To, err)
	}
	if got == nil {
		e.t.Fatalf("SearchRecords(%s of %s) = nil, nil; want a non-nil slice", q.Type, q.PatientID)
	}
	seen := map[string]bool{}
	for _, r := range got {
		if r.Type != q.Type || r.PatientID != q.PatientID {
			e.t.Errorf("SearchRecords(%s of %s) returned %s %s of %q", q.Type, q.PatientID, r.Type, r.ID, r.PatientID)
		}
		if seen[r.ID] {
			e.t.Errorf("SearchRecords(%s of %s) returned %s twice", q.Type, q.PatientID, r.ID)
		}
		seen[r.ID] = true
	}
	return got
}

func (s recordSuite) fields(t *testing.T) {
	e := s.setup(t)
	p := e.patient()
	var seeds []SeedRecord
	for _, typ := range ehr.ClinicalTypes {
		seeds = append(seeds, e.full(typ, p))
	}
	seeds = append(seeds, observation(p, "2023-05-02T08:15:00Z", &ehr.RecordValue{String: "Positive"}),
		observation(p, "2023-05-03", nil))
	ids := e.seed(seeds...)
	for i := range seeds {
		seeds[i].ID = ids[i]
	}
	for _, typ := range ehr.ClinicalTypes {
		got := e.search(ehr.RecordQuery{Type: typ, PatientID: p})
		var want []SeedRecord
		for _, sd := range seeds {
			if sd.Type == typ {
				want = append(want, sd)
			}
		}
		e.compare(typ, got, want)
	}
}

// compare checks that got holds exactly want's records, field by field.
func (e *recordEnv) compare(typ ehr.ClinicalType, got []ehr.Record, want []SeedRecord) {
	e.t.Helper()
	if len(got) != len(want) {
		e.t.Errorf("%s: %d records, want %d", typ, len(got), len(want))
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(r ehr.Record) bool { return r.ID == w.ID })
		if i < 0 {
			e.t.Errorf("%s: record %s (%s) not returned", typ, w.ID, w.Date)
			continue
		}
		e.checkRecord(got[i], w)
	}
}

func (e *recordEnv) checkRecord(got ehr.Record, w SeedRecord) {
	t := e.t
	t.Helper()
	want := w.Record
	if e.b.NoAttachment {
		want.Attachment = nil
	}
	if got.Date != want.Date || got.Status != want.Status || got.Code != want.Code || got.Text != want.Text {
		t.Errorf("%s %s: date %q, status %q, code %+v, text %q;\nwant %q, %q, %+v, %q", got.Type, got.ID,
			got.Date, got.Status, got.Code, got.Text, want.Date, want.Status, want.Code, want.Text)
	}
	if g, w := valueString(got.Value), valueString(want.Value); g != w {
		t.Errorf("%s %s: value %s, want %s", got.Type, got.ID, g, w)
	}
	if g, w := attachmentString(got.Attachment), attachmentString(want.Attachment); g != w {
		t.Errorf("%s %s: attachment %s, want %s", got.Type, got.ID, g, w)
	}
	if w.Content != "" {
		all := fmt.Sprintf("%+v %s", got, attachmentString(got.Attachment))
		if strings.Contains(all, w.Content) || strings.Contains(all, base64.StdEncoding.EncodeToString([]byte(w.Content))) {
			t.Errorf("%s %s carries the document's content or address: %s", got.Type, got.ID, all)
		}
	}
}

func valueString(v *ehr.RecordValue) string {
	switch {
	case v == nil:
		return "none"
	case v.Quantity != nil:
		return fmt.Sprintf("quantity %q %q", v.Quantity.Value, v.Quantity.Unit)
	default:
		return fmt.Sprintf("string %q", v.String)
	}
}

func attachmentString(a *ehr.Attachment) string {
	if a == nil {
		return "none"
	}
	size := "unsaid"
	if a.Size != nil {
		size = fmt.Sprint(*a.Size)
	}
	return fmt.Sprintf("{contentType %q, title %q, size %s}", a.ContentType, a.Title, size)
}

// The first coding and text of each type's sample, with real-looking codes
// (LOINC, SNOMED CT, RxNorm, CVX).
var sampleCodes = map[ehr.ClinicalType]struct {
	code ehr.Coding
	text string
}{
	ehr.TypeEncounter: {ehr.Coding{System: "http://snomed.info/sct", Code: "185349003",
		Display: "Encounter for check up (procedure)"}, "Annual check-up"},
	ehr.TypeCondition: {ehr.Coding{System: "http://snomed.info/sct", Code: "44054006",
		Display: "Diabetes mellitus type 2 (disorder)"}, "Type 2 diabetes"},
	ehr.TypeObservation: {ehr.Coding{System: "http://loinc.org", Code: "2345-7",
		Display: "Glucose [Moles/volume] in Serum or Plasma"}, "Glucose"},
	ehr.TypeMedicationRequest: {ehr.Coding{System: "http://www.nlm.nih.gov/research/umls/rxnorm", Code: "860975",
		Display: "24 HR metformin hydrochloride 500 MG Extended Release Oral Tablet"}, "Metformin 500 mg ER"},
	ehr.TypeAllergyIntolerance: {ehr.Coding{System: "http://snomed.info/sct", Code: "91936005",
		Display: "Allergy to penicillin (finding)"}, "Penicillin allergy"},
	ehr.TypeImmunization: {ehr.Coding{System: "http://hl7.org/fhir/sid/cvx", Code: "140",
		Display: "Influenza, seasonal, injectable, preservative free"}, "Flu vaccine"},
	ehr.TypeProcedure: {ehr.Coding{System: "http://snomed.info/sct", Code: "73761001",
		Display: "Colonoscopy (procedure)"}, "Screening colonoscopy"},
	ehr.TypeDocumentReference: {ehr.Coding{System: "http://loinc.org", Code: "18842-5",
		Display: "Discharge summary"}, "Discharge summary, cardiology"},
	ehr.TypeDiagnosticReport: {ehr.Coding{System: "http://loinc.org", Code: "58410-2",
		Display: "CBC panel - Blood by Automated count"}, "Complete blood count"},
}

// sampleStatus is a status each type's resources may hold (for Condition
// and AllergyIntolerance, the clinicalStatus code).
var sampleStatus = map[ehr.ClinicalType]string{
	ehr.TypeEncounter: "finished", ehr.TypeCondition: "active", ehr.TypeObservation: "final",
	ehr.TypeMedicationRequest: "active", ehr.TypeAllergyIntolerance: "active", ehr.TypeImmunization: "completed",
	ehr.TypeProcedure: "completed", ehr.TypeDocumentReference: "current", ehr.TypeDiagnosticReport: "final",
}

// record is a sample record of typ of the person p, dated date by the
// element dated.
func record(typ ehr.ClinicalType, p, date string, dated DatedBy) SeedRecord {
	c := sampleCodes[typ]
	return SeedRecord{Record: ehr.Record{Type: typ, PatientID: p, Date: date, Status: sampleStatus[typ],
		Code: c.code, Text: c.text}, DatedBy: dated}
}

func observation(p, date string, v *ehr.RecordValue) SeedRecord {
	r := record(ehr.TypeObservation, p, date, DatedByMain)
	r.Value = v
	return r
}

// full is a sample of typ with every field the contract names: an
// Observation's quantity, a DocumentReference's attachment and content.
func (e *recordEnv) full(typ ehr.ClinicalType, p string) SeedRecord {
	switch typ {
	case ehr.TypeObservation:
		return observation(p, "2023-05-01T09:30:00-04:00", &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "7.2", Unit: "mmol/L"}})
	case ehr.TypeDocumentReference:
		r := record(typ, p, "2023-05-01T16:45:00+02:00", DatedByMain)
		size := int64(2048)
		r.Attachment = &ehr.Attachment{ContentType: "application/pdf", Title: "Discharge summary, 1 May 2023", Size: &size}
		r.Content = "document-content-" + randomTag() + randomTag()
		return r
	}
	return record(typ, p, "2023-05-01", DatedByMain)
}

func (s recordSuite) dateRange(t *testing.T) {
	e := s.setup(t)
	p := e.patient()
	from, to := ehr.Date{Year: 2023, Month: time.March, Day: 1}, ehr.Date{Year: 2023, Month: time.March, Day: 31}
	in := []string{
		"2023-03-01T00:05:00+14:00", // the first day, before it began in UTC
		"2023-03-15T12:00:00Z",
		"2023-03-31T23:30:00-05:00", // the last day, after it ended in UTC
	}
	out := []string{"2023-02-27T12:00:00Z", "2023-04-02T12:00:00Z"}
	for _, typ := range ehr.ClinicalTypes {
		var seeds []SeedRecord
		for _, dated := range []DatedBy{DatedByMain, DatedByPeriod, DatedByFallback} {
			for _, d := range append(slices.Clone(in), out...) {
				seeds = append(seeds, record(typ, p, d, dated))
			}
		}
		ids := e.seed(seeds...)
		got := e.search(ehr.RecordQuery{Type: typ, PatientID: p, From: from, To: to})
		for i, sd := range seeds {
			if !slices.Contains(in, sd.Date) {
				continue
			}
			j := slices.IndexFunc(got, func(r ehr.Record) bool { return r.ID == ids[i] })
			if j < 0 {
				t.Errorf("%s dated %s by %s: lost to the range %v–%v", typ, sd.Date, sd.DatedBy, from, to)
			} else if got[j].Date != sd.Date {
				t.Errorf("%s %s: date %q, want %q", typ, ids[i], got[j].Date, sd.Date)
			}
		}
	}
}

// String names the element: main, period, fallback.
func (d DatedBy) String() string {
	switch d {
	case DatedByPeriod:
		return "period"
	case DatedByFallback:
		return "fallback"
	}
	return "main"
}

func (s recordSuite) isolation(t *testing.T) {
	e := s.setup(t)
	a, b := e.patient(), e.patient()
	var seeds []SeedRecord
	for _, typ := range ehr.ClinicalTypes {
		for _, p := range []string{a, b} {
			seeds = append(seeds, record(typ, p, "2022-07-04T08:00:00Z", DatedByMain), record(typ, p, "2022-07-05T10:00:00Z", DatedByFallback))
		}
	}
	ids := e.seed(seeds...)
	for _, typ := range ehr.ClinicalTypes {
		var want []string
		for i, sd := range seeds {
			if sd.Type == typ && sd.PatientID == a {
				want = append(want, ids[i])
			}
		}
		for _, q := range []ehr.RecordQuery{
			{Type: typ, PatientID: a},
			{Type: typ, PatientID: a, From: ehr.Date{Year: 2022, Month: time.July, Day: 1}, To: ehr.Date{Year: 2022, Month: time.July, Day: 31}},
		} {
			if got := recordIDs(e.search(q)); !sameSet(got, want) {
				t.Errorf("SearchRecords(%s, %v–%v) = %v; want %v", typ, q.From, q.To, got, want)
			}
		}
	}
}

// paging seeds more records than the largest page the adapters ask for
// (100), so every server pages them whatever its own page size (a searcher
// that stops at the first page, or walks one twice, fails), with and
// without a date range.
func (s recordSuite) paging(t *testing.T) {
	e := s.setup(t)
	p, other := e.patient(), e.patient()
	start := time.Date(2021, time.January, 1, 9, 0, 0, 0, time.UTC)
	var obs, enc []SeedRecord
	for i := range 150 {
		obs = append(obs, observation(p, start.AddDate(0, 0, i).Format(time.RFC3339),
			&ehr.RecordValue{Quantity: &ehr.Quantity{Value: fmt.Sprintf("%d.%d", 4+i%3, i%10), Unit: "mmol/L"}}))
	}
	for i := range 130 {
		enc = append(enc, record(ehr.TypeEncounter, p, start.AddDate(0, 0, 2*i).Format(time.RFC3339), DatedByMain))
	}
	obsIDs, encIDs := e.seed(obs...), e.seed(enc...)
	e.seed(observation(other, start.Format(time.RFC3339), nil), record(ehr.TypeEncounter, other, start.Format(time.RFC3339), DatedByMain))

	if got := recordIDs(e.search(ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: p})); !sameSet(got, obsIDs) {
		t.Errorf("150 observations: got %d records (%d distinct of the seeded); want each once", len(got), countIn(got, obsIDs))
	}
	q := ehr.RecordQuery{Type: ehr.TypeEncounter, PatientID: p,
		From: ehr.Date{Year: 2020, Month: time.December, Day: 31}, To: ehr.Date{Year: 2022, Month: time.December, Day: 31}}
	if got := recordIDs(e.search(q)); !sameSet(got, encIDs) {
		t.Errorf("130 encounters in a range: got %d records (%d distinct of the seeded); want each once", len(got), countIn(got, encIDs))
	}
}

func (s recordSuite) none(t *testing.T) {
	e := s.setup(t)
	empty, conditions := e.patient(), e.patient()
	e.seed(record(ehr.TypeCondition, conditions, "2020-02-02", DatedByMain))
	for _, typ := range ehr.ClinicalTypes {
		for _, q := range []ehr.RecordQuery{
			{Type: typ, PatientID: empty},
			{Type: typ, PatientID: empty, From: ehr.Date{Year: 2000, Month: time.January, Day: 1}, To: ehr.Date{Year: 2030, Month: time.January, Day: 1}},
		} {
			if got := e.search(q); len(got) != 0 {
				t.Errorf("SearchRecords(%s of a person without records) = %v; want none", typ, recordIDs(got))
			}
		}
	}
	if got := e.search(ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: conditions}); len(got) != 0 {
		t.Errorf("observations of a person with only conditions = %v; want none", recordIDs(got))
	}
}

func recordIDs(rs []ehr.Record) []string {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// countIn counts the distinct ids of got that are in want.
func countIn(got, want []string) int {
	n := 0
	for _, id := range slices.Compact(slices.Sorted(slices.Values(got))) {
		if slices.Contains(want, id) {
			n++
		}
	}
	return n
}
