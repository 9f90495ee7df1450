package ehr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// clinician may search people and observations.
func clinician(sub string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: sub,
		Scopes: core.ParseScopes("user/Patient.rs user/Observation.rs")})
}

// recordEHR is a system whose people are people and whose records are
// records (by patient id); it counts the record searches it is asked.
type recordEHR struct {
	name    string
	people  []Patient
	records map[string][]Record
	err     error // of the record searches

	mu    sync.Mutex
	asked []RecordQuery
}

func (e *recordEHR) system() System {
	return System{Name: e.name, SearchTypes: []string{SearchTypePatientRecord}, Patients: ehrWith(e.people, nil),
		Records: &RecordSearcherMock{SearchRecordsFunc: func(_ context.Context, q RecordQuery) ([]Record, error) {
			e.mu.Lock()
			e.asked = append(e.asked, q)
			e.mu.Unlock()
			if e.err != nil {
				return nil, e.err
			}
			return append([]Record{}, e.records[q.PatientID]...), nil
		}}}
}

func (e *recordEHR) queries() []RecordQuery {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

func loinc(code string) Coding { return Coding{System: "http://loinc.org", Code: code} }

func recordService(ehrs ...*recordEHR) *Service {
	var systems []System
	for _, e := range ehrs {
		systems = append(systems, e.system())
	}
	return NewService(FixedSystems{Searched: systems}, memCache(), Config{CacheTTL: time.Minute})
}

func itemIDs(items []RecordItem) []string {
	var out []string
	for _, it := range items {
		var srcs []string
		for _, s := range it.Sources {
			srcs = append(srcs, s.Source+":"+s.RecordID)
		}
		out = append(out, fmt.Sprint(srcs))
	}
	return out
}

// Records of the person found in two systems are read from both, kept by
// the date range and merged: the shared one is one item with both
// sources, tied to the person's id in a search of people.
func TestSearchRecords_MergesTheRecordsOfThePeopleFound(t *testing.T) {
	ana := mrn("urn:mrn", "77")
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Lopez", "Ana", "1980-02-01", ana)}, records: map[string][]Record{
		"a1": {obs("o1", "a1", "2024-03-01T09:00:00Z", loinc("2345-7")), obs("o2", "a1", "2023-12-31", loinc("4548-4")),
			obs("o3", "a1", "2024-06-10", loinc("4548-4")), obs("o4", "a1", "", loinc("8867-4"))},
	}}
	b := &recordEHR{name: "b", people: []Patient{pat("b9", "Lopez", "Ana", "1980-02-01", ana)}, records: map[string][]Record{
		"b9": {obs("x1", "b9", "2024-03-01T15:00:00+01:00", loinc("2345-7")), obs("x2", "b9", "2024-07-01", loinc("8867-4"))},
	}}
	s := recordService(a, b)
	res, err := s.Search(clinician("u1"), SearchRequest{Query: "identifier:77", RecordType: "observation",
		UpdatedFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), UpdatedTo: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"[b:x2]", "[a:o3]", "[a:o1 b:x1]"} // o2 before the range, o4 undated
	if res.Status != StatusSuccess || res.RecordType != TypeObservation || res.TotalCount != 3 || res.Results != nil ||
		fmt.Sprint(itemIDs(res.Records)) != fmt.Sprint(want) {
		t.Fatalf("got %s %s total %d items %v people %v; want %v", res.Status, res.RecordType, res.TotalCount, itemIDs(res.Records), res.Results, want)
	}
	people, err := s.Search(clinician("u1"), SearchRequest{Query: "identifier:77"})
	if err != nil || len(people.Results) != 1 {
		t.Fatalf("people: %+v, %v", people, err)
	}
	for _, it := range res.Records {
		if it.PersonID != people.Results[0].ID {
			t.Errorf("item %s: personId %q, want the person's %q", it.ID, it.PersonID, people.Results[0].ID)
		}
	}
	for _, q := range append(a.queries(), b.queries()...) {
		if q.Type != TypeObservation || q.From != (Date{2024, 1, 1}) || q.To != (Date{2024, 12, 31}) {
			t.Errorf("asked %+v", q)
		}
	}
}

// More than ten people in one system refuses the search before any
// record is read, anywhere.
func TestSearchRecords_TooManyPeopleIsQueryTooBroad(t *testing.T) {
	var many []Patient
	for i := range MaxRecordPeople + 1 {
		many = append(many, pat(fmt.Sprint("p", i), "Smith", "Jo", fmt.Sprintf("1980-01-%02d", i+1)))
	}
	a := &recordEHR{name: "a", people: many[:1]}
	b := &recordEHR{name: "b", people: many}
	res, err := recordService(a, b).Search(clinician("u1"), SearchRequest{Query: "Smith", RecordType: "observation"})
	if !errors.Is(err, ErrQueryTooBroad) || res != nil {
		t.Fatalf("got %+v, %v; want query_too_broad", res, err)
	}
	if n := len(a.queries()) + len(b.queries()); n != 0 {
		t.Fatalf("%d record searches made", n)
	}
	// Ten is still allowed.
	b.people = many[:MaxRecordPeople]
	if _, err := recordService(a, b).Search(clinician("u1"), SearchRequest{Query: "Smith", RecordType: "observation"}); err != nil {
		t.Fatalf("ten people: %v", err)
	}
	if n := len(b.queries()); n != MaxRecordPeople {
		t.Fatalf("%d record searches for ten people", n)
	}
}

// A system that cannot search the type, or has no record search, is in
// the errors; the others answer (partial). When none answers: error.
func TestSearchRecords_ASystemThatCannotSearchTheTypeIsPartial(t *testing.T) {
	p := pat("a1", "Lopez", "Ana", "1980-02-01")
	a := &recordEHR{name: "a", people: []Patient{p}, records: map[string][]Record{"a1": {obs("o1", "a1", "2024-01-01", loinc("1"))}}}
	b := &recordEHR{name: "b", people: []Patient{p}, err: &core.Error{Kind: core.KindBadGateway, Code: "record_type_not_supported", Message: "b cannot search Observation records"}}
	c := System{Name: "c", SearchTypes: []string{SearchTypePatientRecord}, Patients: ehrWith([]Patient{p}, nil)} // no record search
	s := NewService(FixedSystems{Searched: []System{a.system(), b.system(), c}}, memCache(), Config{CacheTTL: time.Minute})
	res, err := s.Search(clinician("u1"), SearchRequest{Query: "Lopez", RecordType: "observation"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusPartial || len(res.Records) != 1 || fmt.Sprint(res.Sources) != "[a]" || len(res.Errors) != 2 ||
		res.Errors[0].Code != "record_type_not_supported" || res.Errors[1].Code != "record_type_not_supported" {
		t.Fatalf("got %+v", res)
	}
	a.err = errors.New("boom")
	res, err = s.Search(clinician("u2"), SearchRequest{Query: "Lopez", RecordType: "observation"})
	if err != nil || res.Status != StatusError || res.Errors[0].Code != "ehr_error" {
		t.Fatalf("all failing: %+v, %v", res, err)
	}
}

// A person's records are read once per page asked: the second page and a
// repeat come from the cache, whose key holds the record type.
func TestSearchRecords_PagesAreCutFromOneCachedList(t *testing.T) {
	var recs []Record
	for i := range 25 {
		recs = append(recs, obs(fmt.Sprint("o", i), "a1", fmt.Sprintf("2024-01-%02d", i+1), loinc(fmt.Sprint(i))))
	}
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Lopez", "Ana", "1980-02-01")}, records: map[string][]Record{"a1": recs}}
	s := recordService(a)
	ctx := clinician("u1")
	first, err := s.Search(ctx, SearchRequest{Query: "Lopez", RecordType: "observation", Page: PageRequest{Limit: 20}})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Search(ctx, SearchRequest{Query: "Lopez", RecordType: "observation", Page: PageRequest{Page: 2, Limit: 20}})
	if err != nil {
		t.Fatal(err)
	}
	if first.TotalCount != 25 || len(first.Records) != 20 || len(second.Records) != 5 || !second.CacheHit ||
		first.Records[0].Date != "2024-01-25" || second.Records[4].Date != "2024-01-01" {
		t.Fatalf("pages: %d+%d of %d, hit %v", len(first.Records), len(second.Records), first.TotalCount, second.CacheHit)
	}
	if n := len(a.queries()); n != 1 {
		t.Fatalf("%d record searches, want 1", n)
	}
	people, err := s.Search(ctx, SearchRequest{Query: "Lopez"})
	if err != nil || people.CacheHit || len(people.Results) != 1 {
		t.Fatalf("a search of people served the record answer: %+v, %v", people, err)
	}
	other, err := s.Search(clinician("u1"), SearchRequest{Query: "Lopez", RecordType: "observation", UpdatedFrom: time.Date(2024, 1, 10, 0, 0, 0, 0, time.UTC),
		UpdatedTo: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)})
	if err != nil || other.CacheHit || other.TotalCount != 16 {
		t.Fatalf("another range: %+v, %v", other, err)
	}
}

// The scope on the record's type decides: without it, 403 naming
// user/<Type>.rs, and no EHR is asked; an unknown type is 400 first.
func TestSearchRecords_NeedsTheScopeOfTheType(t *testing.T) {
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Lopez", "Ana", "1980-02-01")}}
	s := recordService(a)
	_, err := s.Search(clinician("u1"), SearchRequest{Query: "Lopez", RecordType: "condition"})
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != core.KindForbidden || e.Scope != "user/Condition.rs" {
		t.Fatalf("condition without its scope: %v", err)
	}
	system := core.WithActor(context.Background(), core.Actor{Subject: "svc", Scopes: core.ParseScopes("system/*.rs")})
	if _, err := s.Search(system, SearchRequest{Query: "Lopez", RecordType: "condition"}); err != nil {
		t.Fatalf("system/*.rs: %v", err)
	}
	onlyObs := core.WithActor(context.Background(), core.Actor{Subject: "u", Scopes: core.ParseScopes("user/Observation.rs")})
	if _, err := s.Search(onlyObs, SearchRequest{Query: "Lopez", RecordType: "observation"}); err != nil {
		t.Fatalf("user/Observation.rs alone: %v", err)
	}
	if _, err := s.Search(onlyObs, SearchRequest{Query: "Lopez"}); !errors.As(err, &e) || e.Scope != "user/Patient.rs" {
		t.Fatalf("people with user/Observation.rs only: %v", err)
	}
	if _, err := s.Search(onlyObs, SearchRequest{Query: "Lopez", RecordType: "labs"}); !errors.Is(err, ErrRecordTypeNotSupported) {
		t.Fatalf("unknown type: %v", err)
	}
	if n := len(a.queries()); n != 2 {
		t.Fatalf("%d record searches, want 2 (the allowed ones)", n)
	}
}

// A record of another person or type, which a server that ignores a
// parameter may answer, is not shown.
func TestSearchRecords_LeavesOutRecordsOfAnotherPersonOrType(t *testing.T) {
	other := obs("o9", "zz", "2024-01-02", loinc("1"))
	cond := Record{Type: TypeCondition, ID: "c1", PatientID: "a1", Date: "2024-01-03"}
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Lopez", "Ana", "1980-02-01")},
		records: map[string][]Record{"a1": {obs("o1", "a1", "2024-01-01", loinc("1")), other, cond}}}
	res, err := recordService(a).Search(clinician("u1"), SearchRequest{Query: "Lopez", RecordType: "observation"})
	if err != nil || fmt.Sprint(itemIDs(res.Records)) != "[[a:o1]]" {
		t.Fatalf("got %v, %v", itemIDs(res.Records), err)
	}
}

// Namesakes (one name and birth date, nothing else shared) are two
// people: the heart rate each system took is two items, one per person,
// never one item under one personId.
func TestSearchRecords_RecordsOfUnmergedPeopleStayApart(t *testing.T) {
	heartRate := loinc("8867-4")
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Varnettsky", "Quillon", "1971-03-14")}, records: map[string][]Record{
		"a1": {obs("o1", "a1", "2024-05-01T09:00:00Z", heartRate)}}}
	b := &recordEHR{name: "b", people: []Patient{pat("b1", "Varnettsky", "Quillon", "1971-03-14")}, records: map[string][]Record{
		"b1": {obs("o9", "b1", "2024-05-01T11:00:00Z", heartRate)}}}
	s := recordService(a, b)
	r, err := s.Search(clinician("u"), SearchRequest{Query: "family:Varnettsky", RecordType: "observation"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Records) != 2 || r.Records[0].PersonID == r.Records[1].PersonID || r.Records[0].PersonID == "" {
		t.Fatalf("items %v, persons %q and %q", itemIDs(r.Records), r.Records[0].PersonID, r.Records[len(r.Records)-1].PersonID)
	}
}

// linksOf is a LinkReader over a fixed set per business.
type linksOf map[string][]PersonLink

func (l linksOf) Links(_ context.Context, business string) (*LinkSet, error) {
	return NewLinkSet(l[business]), nil
}

// A member's link changes the acting business's next answer, cached or
// not, for people and records alike; another business's searches are not
// touched.
func TestSearch_ALinkChangesTheNextAnswerEvenCached(t *testing.T) {
	heartRate := loinc("8867-4")
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Varnettsky", "Quillon", "1971-03-14")}, records: map[string][]Record{
		"a1": {obs("o1", "a1", "2024-05-01T09:00:00Z", heartRate)}}}
	b := &recordEHR{name: "b", people: []Patient{pat("b1", "Varnettsky", "Quillon", "1971-03-14")}, records: map[string][]Record{
		"b1": {obs("o9", "b1", "2024-05-01T11:00:00Z", heartRate)}}}
	links := linksOf{}
	systems := FixedSystems{Searched: []System{a.system(), b.system()}}
	s := NewService(systems, memCache(), Config{CacheTTL: time.Minute, Links: links})
	tenancy := NewTenancy(systems, practices{"u": {"biz-1"}})
	search := func(recordType string) *SearchResult {
		t.Helper()
		id, err := tenancy.Act(clinician("u"), "biz-1", UseSearch)
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Search(clinician("u"), SearchRequest{Business: id, Query: "family:Varnettsky", RecordType: recordType})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := search(""); len(r.Results) != 2 || len(r.Results[0].PossibleMatches) != 1 {
		t.Fatalf("before the link: %+v", r.Results)
	}
	search("observation")
	links["biz-1"] = []PersonLink{link("l1", Same, time.Now(), "a/a1", "b/b1")}
	r := search("")
	if !r.CacheHit || len(r.Results) != 1 || r.Results[0].Match == nil || r.Results[0].Match.Grade != Confirmed {
		t.Fatalf("after the link (cache hit %v): %+v", r.CacheHit, r.Results)
	}
	rec := search("observation")
	if !rec.CacheHit || len(rec.Records) != 1 || len(rec.Records[0].Sources) != 2 || rec.Records[0].PersonID != r.Results[0].ID {
		t.Fatalf("records after the link (cache hit %v): %v", rec.CacheHit, itemIDs(rec.Records))
	}
}

type brokenLinks struct{}

func (brokenLinks) Links(context.Context, string) (*LinkSet, error) {
	return nil, errors.New("db down")
}

// Without the practice's links a search could merge records a member
// kept apart: it is refused (fail closed).
func TestSearch_UnreadableLinksRefuseTheSearch(t *testing.T) {
	a := &recordEHR{name: "a", people: []Patient{pat("a1", "Varnettsky", "Quillon", "1971-03-14")}}
	systems := FixedSystems{Searched: []System{a.system()}}
	s := NewService(systems, memCache(), Config{CacheTTL: time.Minute, Links: brokenLinks{}})
	id, err := NewTenancy(systems, practices{"u": {"biz-1"}}).Act(clinician("u"), "biz-1", UseSearch)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Search(clinician("u"), SearchRequest{Business: id, Query: "family:Varnettsky"})
	if !errors.Is(err, ErrLinksUnavailable) || core.KindOf(err) != core.KindUnavailable {
		t.Fatalf("err %v", err)
	}
}
