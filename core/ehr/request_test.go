package ehr

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestParseQuery(t *testing.T) {
	ok := []struct {
		in   string
		want PatientQuery
	}{
		{"Ana Lopez", PatientQuery{Text: "Ana Lopez"}},
		{"  Ana   Lopez ", PatientQuery{Text: "Ana Lopez"}},
		{"given:Ana birthdate:1980-02-01", PatientQuery{Given: "Ana", BirthDate: "1980-02-01"}},
		{"family:Lopez given:Ana gender:FEMALE", PatientQuery{Family: "Lopez", Given: "Ana", Gender: "female"}},
		{`family:"van der Berg" Anna`, PatientQuery{Family: "van der Berg", Text: "Anna"}},
		{`identifier:"urn:oid:1.2.3|MRN-77" phone:+15125550100`, PatientQuery{Identifier: "urn:oid:1.2.3|MRN-77", Phone: "+15125550100"}},
		{"identifier:MRN-77", PatientQuery{Identifier: "MRN-77"}},
		{"Family:Lopez", PatientQuery{Family: "Lopez"}},
	}
	for _, c := range ok {
		got, err := ParseQuery(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseQuery(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := []struct{ in, mention string }{
		{"", "query is required"},
		{"   ", "query is required"},
		{strings.Repeat("a", 501), "at most 500"},
		{"birtdate:1980-01-01", "unknown field"},
		{"birthdate:1980-13-01", "birthdate"},
		{"birthdate:01/02/1980", "birthdate"},
		{"gender:robot", "gender"},
		{"given:Ana given:Bo", "given twice"},
		{"given:", "needs a value"},
		{`family:"van der`, "unclosed quote"},
		{"identifier:urn:oid:1|2", "unless quoted"},
		{":Ana", "field name"},
		{"Ana\x00", "plain text"},
		{`Ana "Lopez"`, "quote"},
	}
	for _, c := range bad {
		_, err := ParseQuery(c.in)
		if !errors.Is(err, ErrInvalidSearch) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("ParseQuery(%q): got %v, want an invalid_search naming %q", c.in, err, c.mention)
		}
	}
}

func TestParseRecordType(t *testing.T) {
	for in, want := range map[string]ClinicalType{
		"": "", "all": "", "ALL": "", "patient": "", "Patient": "",
		"observation": TypeObservation, "Medication_Request": TypeMedicationRequest,
		"document_reference": TypeDocumentReference, "diagnostic_report": TypeDiagnosticReport,
	} {
		if got, err := ParseRecordType(in); got != want || err != nil {
			t.Errorf("ParseRecordType(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"lab_result", "Observation ", "medicationrequest", "MedicationRequest", "observations", strings.Repeat("é", 100)} {
		_, err := ParseRecordType(in)
		if !errors.Is(err, ErrRecordTypeNotSupported) || !strings.Contains(err.Error(), "medication_request") {
			t.Errorf("ParseRecordType(%q) = %v; want record_type_not_supported listing the types", in, err)
		}
		if len(err.Error()) > 400 || !utf8.ValidString(err.Error()) {
			t.Errorf("ParseRecordType(%q): message of %d bytes, valid UTF-8 %v", in, len(err.Error()), utf8.ValidString(err.Error()))
		}
	}
}

// A record search's date range bounds the records, not the people.
func TestValidate_RecordSearchRangeBoundsTheRecords(t *testing.T) {
	v, err := validate(SearchRequest{Query: "identifier:MRN-1", UpdatedFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedTo: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC)}, TypeObservation)
	if err != nil || v.recordType != TypeObservation || !v.query.UpdatedFrom.IsZero() || !v.query.UpdatedTo.IsZero() ||
		v.from != (Date{2024, 1, 1}) || v.to != (Date{2024, 12, 31}) {
		t.Fatalf("validate: %+v, %v", v, err)
	}
	if _, err := validate(SearchRequest{Query: "a", UpdatedFrom: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC),
		UpdatedTo: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, TypeCondition); !errors.Is(err, ErrInvalidSearch) {
		t.Errorf("reversed range: %v", err)
	}
}

func TestValidate(t *testing.T) {
	v, err := validate(SearchRequest{Query: "Ana", UpdatedFrom: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedTo: time.Date(2024, 12, 31, 0, 0, 0, 0, time.UTC), RecordType: "ALL"}, "")
	if err != nil || v.page != 1 || v.limit != DefaultLimit || v.searchType != SearchTypePatientRecord ||
		!v.query.UpdatedFrom.Equal(time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)) || v.query.UpdatedTo.Day() != 31 {
		t.Fatalf("defaults: %+v, %v", v, err)
	}
	bad := []struct {
		r    SearchRequest
		want error
	}{
		{SearchRequest{}, ErrInvalidSearch},
		{SearchRequest{Query: "a", SearchType: "lab_result"}, ErrInvalidSearch},
		{SearchRequest{Query: "a", UpdatedFrom: time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC), UpdatedTo: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)}, ErrInvalidSearch},
		{SearchRequest{Query: "a", Page: PageRequest{Page: -1}}, ErrInvalidSearch},
		{SearchRequest{Query: "a", Page: PageRequest{Limit: 101}}, ErrInvalidSearch},
		{SearchRequest{Query: "a", Page: PageRequest{Limit: -5}}, ErrInvalidSearch},
	}
	for _, c := range bad {
		if _, err := validate(c.r, ""); !errors.Is(err, c.want) {
			t.Errorf("validate(%+v) = %v, want %v", c.r, err, c.want)
		}
	}
}

// FuzzParseQuery: any text parses or fails as invalid_search; a parsed
// query keeps its fields within the text it came from.
func FuzzParseQuery(f *testing.F) {
	f.Add("given:Ana birthdate:1980-02-01")
	f.Add(`family:"van der Berg" x`)
	f.Add(`identifier:"a|b" phone:1`)
	f.Fuzz(func(t *testing.T, s string) {
		q, err := ParseQuery(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidSearch) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		for _, v := range []string{q.Family, q.Given, q.Identifier, q.Phone, q.BirthDate} {
			if !strings.Contains(s, v) {
				t.Fatalf("field %q is not in the query %q", v, s)
			}
		}
	})
}

func TestValidate_PaginationZeroIsDefaultOutOfRangeIsInvalid(t *testing.T) {
	for _, c := range []struct {
		name        string
		page, limit int
		wantPage    int
		wantLimit   int
		wantErr     string
	}{
		{"zero", 0, 0, 1, DefaultLimit, ""},
		{"given", 3, MaxLimit, 3, MaxLimit, ""},
		{"page -1", -1, 0, 0, 0, "pagination.page"},
		{"page at MaxPage", MaxPage, 0, MaxPage, DefaultLimit, ""},
		{"page above MaxPage", MaxPage + 1, 0, 0, 0, "pagination.page"},
		{"largest int page", math.MaxInt, MaxLimit, 0, 0, "pagination.page"},
		{"limit -1", 0, -1, 0, 0, "pagination.limit"},
		{"limit above max", 0, MaxLimit + 1, 0, 0, "pagination.limit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := validate(SearchRequest{Query: "Ana", Page: PageRequest{Page: c.page, Limit: c.limit}}, "")
			if c.wantErr != "" {
				if !errors.Is(err, ErrInvalidSearch) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want invalid_search naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil || v.page != c.wantPage || v.limit != c.wantLimit {
				t.Fatalf("page %d limit %d err %v; want page %d limit %d", v.page, v.limit, err, c.wantPage, c.wantLimit)
			}
		})
	}
}
