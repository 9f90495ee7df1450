package fhirtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
)

const (
	testAPIKey = "fhirtest-key-7c1d"
	mrnSystem  = "urn:oid:2.16.840.1.113883.3.9999.1"
	// pageSize is the server's largest page: searches for more than it
	// must follow next links.
	pageSize = 10
)

// seedPerson is one seeded patient. The names are chosen so that a search
// value matches the same patients whether the server matches the start of a
// name part (FHIR) or any part of it (Medplum's in-memory repository).
type seedPerson struct {
	family, given, birthDate, gender string
}

var seedPeople = []seedPerson{
	{"Okafor", "Adaeze", "1975-03-14", "female"},
	{"Okafor", "Chinedu", "1978-07-02", "male"},
	{"Okafor", "Ngozi", "2004-11-30", "female"},
	{"Lindqvist", "Astrid", "1962-01-09", "female"},
	{"Lindqvist", "Bjorn", "1960-05-21", "male"},
	{"Nakamura", "Haruto", "1990-08-17", "male"},
	{"Nakamura", "Yui", "1993-02-28", "female"},
	{"Fitzgerald", "Siobhan", "1975-03-14", "female"},
	{"Abernathy", "Quentin", "1948-12-01", "male"},
	{"Delacroix", "Marguerite", "1983-06-06", "female"},
	{"Esposito", "Gianluca", "1971-10-10", "male"},
	{"Kowalczyk", "Zofia", "2010-04-04", "female"},
	{"Mbeki", "Thabo", "1999-09-19", "male"},
	{"Oyelaran", "Folake", "1987-01-23", "female"},
	{"Petrosyan", "Armen", "1955-02-14", "male"},
	{"Quispe", "Wayra", "2001-07-07", "other"},
	{"Rasmussen", "Freja", "1996-03-03", "female"},
	{"Suleiman", "Yusuf", "1969-11-11", "male"},
	{"Tanaka", "Hiroshi", "1952-08-08", "male"},
	{"Ueda", "Sakura", "1985-05-05", "female"},
	{"Vasquez", "Paloma", "1979-12-24", "female"},
	{"Whitcombe", "Eliza", "1944-04-15", "unknown"},
	{"Xiong", "Pao", "2015-06-30", "male"},
	{"Yilmaz", "Deniz", "1991-10-29", "female"},
	{"Zielinski", "Tomasz", "1966-02-02", "male"},
}

// seeded is what the server holds: the id of each seedPeople entry, by
// index, and the day each was last updated (January 2024, i+1).
type seeded struct {
	srv    *fhirtest.Server
	ids    []string
	byID   map[string]int
	search *fhir.Client
}

func mrn(i int) string   { return fmt.Sprintf("MRN-%04d", i+1) }
func phone(i int) string { return fmt.Sprintf("+1-555-01%02d", i+1) }
func updated(i int) time.Time {
	return time.Date(2024, time.January, i+1, 12, 30, 0, 0, time.UTC)
}

// seedServer starts a server with API-key auth and pages of pageSize, seeds
// seedPeople, and returns the FHIR adapter on it, through ehrhttp.
func seedServer(t *testing.T) *seeded {
	t.Helper()
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize),
		fhirtest.WithRequestLog())
	s := &seeded{srv: srv, byID: map[string]int{}}
	for i, p := range seedPeople {
		created := srv.Seed(t, map[string]any{
			"resourceType": "Patient",
			"meta":         map[string]any{"lastUpdated": updated(i).Format(time.RFC3339)},
			"name": []any{map[string]any{
				"use": "official", "family": p.family, "given": []any{p.given},
			}},
			"birthDate": p.birthDate,
			"gender":    p.gender,
			"identifier": []any{map[string]any{
				"type": map[string]any{"coding": []any{map[string]any{
					"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": "MR",
				}}},
				"system": mrnSystem,
				"value":  mrn(i),
			}},
			"telecom": []any{map[string]any{"system": "phone", "value": phone(i), "use": "mobile"}},
			"address": []any{map[string]any{
				"line": []any{fmt.Sprintf("%d Harbour Road", 10+i)}, "city": "Port Ellis",
				"state": "CA", "postalCode": fmt.Sprintf("940%02d", i), "country": "US",
			}},
		})
		id := created["id"].(string)
		s.ids = append(s.ids, id)
		s.byID[id] = i
	}
	s.search = fhir.New(newEHRClient(t, srv.URL(), testAPIKey), "/Patient")
	return s
}

// searchRequests counts the Patient searches in the server's request log,
// waiting up to 10 s for it to reach want (the server logs a request
// after answering it); want < 0 waits for nothing.
func (s *seeded) searchRequests(t *testing.T, want int) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n := strings.Count(s.srv.Output(), "GET /fhir/Patient?")
		if want < 0 || n >= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newEHRClient(t *testing.T, baseURL, apiKey string) *ehrhttp.Client {
	t.Helper()
	client, err := ehrhttp.New(ehrhttp.Config{
		Name:    "medplum",
		BaseURL: baseURL,
		Auth:    ehrhttp.AuthConfig{Type: ehrhttp.AuthAPIKey, APIKey: apiKey},
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatalf("ehrhttp.New: %v", err)
	}
	return client
}

// indexes returns the seedPeople indexes of the patients, sorted, and fails
// on a patient that was not seeded or comes twice.
func (s *seeded) indexes(t *testing.T, got []ehr.Patient) []int {
	t.Helper()
	var out []int
	for _, p := range got {
		i, ok := s.byID[p.ID]
		if !ok {
			t.Fatalf("unknown patient %q", p.ID)
		}
		if slices.Contains(out, i) {
			t.Fatalf("patient %q returned twice", p.ID)
		}
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

func TestIntegrationFHIRAdapter_SearchPatientsByEachQueryField(t *testing.T) {
	s := seedServer(t)
	// seedPeople indexes whose gender is female, for the gender case.
	var female []int
	for i, p := range seedPeople {
		if p.gender == "female" {
			female = append(female, i)
		}
	}
	tests := []struct {
		name  string
		query ehr.PatientQuery
		want  []int
	}{
		{"text one word", ehr.PatientQuery{Text: "Nakamura"}, []int{5, 6}},
		{"text given and family", ehr.PatientQuery{Text: "Ngozi Okafor"}, []int{2}},
		{"text is case-insensitive", ehr.PatientQuery{Text: "lindqvist"}, []int{3, 4}},
		{"family", ehr.PatientQuery{Family: "Okafor"}, []int{0, 1, 2}},
		{"given", ehr.PatientQuery{Given: "Zofia"}, []int{11}},
		{"family and given", ehr.PatientQuery{Family: "Okafor", Given: "Chinedu"}, []int{1}},
		{"birth date", ehr.PatientQuery{BirthDate: "1975-03-14"}, []int{0, 7}},
		{"gender", ehr.PatientQuery{Gender: "female"}, female},
		{"gender other", ehr.PatientQuery{Gender: "other"}, []int{15}},
		{"family and gender", ehr.PatientQuery{Family: "Lindqvist", Gender: "male"}, []int{4}},
		{"identifier value", ehr.PatientQuery{Identifier: mrn(12)}, []int{12}},
		{"identifier system|value", ehr.PatientQuery{Identifier: mrnSystem + "|" + mrn(20)}, []int{20}},
		{"identifier of another system", ehr.PatientQuery{Identifier: "urn:other|" + mrn(20)}, nil},
		{"phone", ehr.PatientQuery{Phone: phone(8)}, []int{8}},
		{"updated from", ehr.PatientQuery{UpdatedFrom: updated(22)}, []int{22, 23, 24}},
		{"updated to", ehr.PatientQuery{UpdatedTo: updated(1)}, []int{0, 1}},
		{"updated from and to, inclusive days", ehr.PatientQuery{
			UpdatedFrom: updated(9), UpdatedTo: updated(11),
		}, []int{9, 10, 11}},
		{"updated range and family", ehr.PatientQuery{
			Family: "Okafor", UpdatedFrom: updated(1), UpdatedTo: updated(24),
		}, []int{1, 2}},
		{"no match", ehr.PatientQuery{Family: "Nobody"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.search.SearchPatients(t.Context(), tt.query)
			if err != nil {
				t.Fatalf("SearchPatients: %v", err)
			}
			if got == nil {
				t.Fatal("SearchPatients returned nil without an error")
			}
			if idx := s.indexes(t, got); !slices.Equal(idx, tt.want) {
				t.Errorf("got patients %v, want %v", idx, tt.want)
			}
		})
	}
}

func TestIntegrationFHIRAdapter_ConvertsThePatientTheServerStored(t *testing.T) {
	s := seedServer(t)
	const i = 9
	got, err := s.search.SearchPatients(t.Context(), ehr.PatientQuery{Identifier: mrn(i)})
	if err != nil {
		t.Fatalf("SearchPatients: %v", err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d patients, want 1", len(got))
	}
	p, want := got[0], seedPeople[i]
	if p.ID != s.ids[i] || p.Source != "medplum" {
		t.Errorf("ID %q Source %q, want %q medplum", p.ID, p.Source, s.ids[i])
	}
	if p.Name.Family != want.family || !slices.Equal(p.Name.Given, []string{want.given}) ||
		p.Name.Text != want.given+" "+want.family {
		t.Errorf("Name = %+v", p.Name)
	}
	if p.BirthDate != want.birthDate || p.Gender != want.gender {
		t.Errorf("BirthDate %q Gender %q, want %q %q", p.BirthDate, p.Gender, want.birthDate, want.gender)
	}
	wantID := []ehr.Identifier{{System: mrnSystem, Value: mrn(i), Type: "MR"}}
	if !slices.Equal(p.Identifiers, wantID) {
		t.Errorf("Identifiers = %+v, want %+v", p.Identifiers, wantID)
	}
	wantTel := []ehr.ContactPoint{{System: "phone", Value: phone(i), Use: "mobile"}}
	if !slices.Equal(p.Telecom, wantTel) {
		t.Errorf("Telecom = %+v, want %+v", p.Telecom, wantTel)
	}
	if len(p.Address) != 1 || p.Address[0].City != "Port Ellis" || p.Address[0].PostalCode != "94009" ||
		!slices.Equal(p.Address[0].Line, []string{"19 Harbour Road"}) || p.Address[0].Country != "US" {
		t.Errorf("Address = %+v", p.Address)
	}
	if !p.LastUpdated.Equal(updated(i)) {
		t.Errorf("LastUpdated = %v, want %v", p.LastUpdated, updated(i))
	}
}

func TestIntegrationFHIRAdapter_FollowsNextLinksPastTheServersPageSize(t *testing.T) {
	s := seedServer(t)
	all := make([]int, len(seedPeople))
	for i := range all {
		all[i] = i
	}
	for _, tt := range []struct {
		name  string
		max   int
		want  int // patients returned
		pages int // search requests sent
	}{
		{"every patient over three pages", 25, 25, 3},
		{"stops inside the second page", 15, 15, 2},
		{"one page", 10, 10, 1},
		{"default max is more than there are", 0, 25, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := s.searchRequests(t, -1)
			got, err := s.search.SearchPatients(t.Context(), ehr.PatientQuery{Max: tt.max})
			if err != nil {
				t.Fatalf("SearchPatients: %v", err)
			}
			idx := s.indexes(t, got) // also fails on a patient returned twice
			if len(idx) != tt.want {
				t.Fatalf("got %d patients, want %d", len(idx), tt.want)
			}
			if tt.want == len(all) && !slices.Equal(idx, all) {
				t.Errorf("got %v, want every seeded patient", idx)
			}
			if n := s.searchRequests(t, before+tt.pages) - before; n != tt.pages {
				t.Errorf("%d search requests, want %d\n%s", n, tt.pages, s.srv.Output())
			}
		})
	}

	// A filtered search over more than one page.
	var female []int
	for i, p := range seedPeople {
		if p.gender == "female" {
			female = append(female, i)
		}
	}
	if len(female) <= pageSize {
		t.Fatalf("the seed has %d female patients: not more than a page", len(female))
	}
	got, err := s.search.SearchPatients(t.Context(), ehr.PatientQuery{Gender: "female", Max: 25})
	if err != nil {
		t.Fatalf("SearchPatients: %v", err)
	}
	if idx := s.indexes(t, got); !slices.Equal(idx, female) {
		t.Errorf("gender=female over pages of %d: got %v, want %v", pageSize, idx, female)
	}
}

func TestIntegrationFHIRAdapter_WrongAPIKeyIsUnauthorized(t *testing.T) {
	s := seedServer(t)
	bad := fhir.New(newEHRClient(t, s.srv.URL(), "not-the-key"), "/Patient")
	got, err := bad.SearchPatients(t.Context(), ehr.PatientQuery{Family: "Okafor"})
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("SearchPatients = %v, %v; want a *core.Error", got, err)
	}
	if ce.Code != "ehr_unauthorized" || !strings.Contains(ce.Message, "401") {
		t.Errorf("error = %+v, want ehr_unauthorized with HTTP 401", ce)
	}
	if strings.Contains(err.Error(), "not-the-key") {
		t.Errorf("error quotes the API key: %v", err)
	}
}

func TestIntegrationFHIRAdapter_InvalidSearchValueReturnsOperationOutcomeText(t *testing.T) {
	s := seedServer(t)
	_, err := s.search.SearchPatients(context.Background(), ehr.PatientQuery{BirthDate: "14/03/1975"})
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("SearchPatients error = %v; want a *core.Error", err)
	}
	if ce.Kind != core.KindBadGateway || !strings.Contains(ce.Message, "400") ||
		!strings.Contains(ce.Message, "Invalid format for date search parameter") {
		t.Errorf("error = %+v, want the server's 400 OperationOutcome text", ce)
	}
}
