package ehr

import (
	"strings"
	"time"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core"
)

// SearchTypePatientRecord is the one search type so far.
const SearchTypePatientRecord = "patient_record"

// Paging defaults and limits, for search and every listing. MaxPage keeps
// page × limit (the offset asked of an EHR) small.
const (
	DefaultLimit = 20
	MaxLimit     = 100
	MaxPage      = 10000
	maxQueryLen  = 500
)

// SearchRequest is a patient search, its values parsed by the caller
// (httpapi reads the client's JSON); Search validates it.
type SearchRequest struct {
	// Business is the acting business (Tenancy.Act; "" none): its
	// systems answer, its person links apply, and the caller's rate limit
	// and cache entries are its.
	Business   string
	Query      string // the query grammar (ParseQuery)
	SearchType string // "" means patient_record
	Location   string
	// RecordType is "", all or patient for a search of people, or a
	// clinical type in snake case (observation): ParseRecordType.
	RecordType string
	// UpdatedFrom and UpdatedTo are filters.dateRange (inclusive dates;
	// both zero when absent): they bound the last update of people, or the
	// clinical date of records (a record search finds its people without
	// them).
	UpdatedFrom, UpdatedTo time.Time
	Page                   PageRequest
}

// PageRequest is the page of a listing asked for: Page counts from 1,
// Limit is the page's size. Zero means the default (page 1,
// DefaultLimit); otherwise Page is 1 to MaxPage and Limit 1 to MaxLimit.
type PageRequest struct {
	Page, Limit int
}

// ErrInvalidSearch is a request that fails validation; the message names
// the field.
var ErrInvalidSearch = &core.Error{Kind: core.KindInvalid, Code: "invalid_search", Message: "Invalid search request"}

// ErrRecordTypeNotSupported is a filters.recordType that is neither all,
// patient nor a clinical type.
var ErrRecordTypeNotSupported = &core.Error{Kind: core.KindInvalid, Code: "record_type_not_supported", Message: "filters.recordType is not supported"}

// ParseRecordType reads filters.recordType, in any letter case: "" for a
// search of people ("", all, patient), else the clinical type it names in
// snake case.
func ParseRecordType(s string) (ClinicalType, error) {
	s = strings.ToLower(s)
	switch s {
	case "", "all", "patient":
		return "", nil
	}
	if t, ok := ParseClinicalType(s); ok {
		return t, nil
	}
	names := make([]string, len(ClinicalTypes))
	for i, t := range ClinicalTypes {
		names[i] = t.Snake()
	}
	return "", ErrRecordTypeNotSupported.WithMessage("filters.recordType %q is not supported; use all, patient, %s",
		clip(s, 64), strings.Join(names, ", "))
}

// clip cuts s to at most n bytes (on a rune boundary) for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func invalid(format string, args ...any) error {
	return ErrInvalidSearch.WithMessage(format, args...)
}

// validated is a request after validation: the normalised query, the
// record type, the page and the systems' search type. For a record search
// the query's date range is empty and from–to bound the records.
type validated struct {
	query       PatientQuery
	recordType  ClinicalType // "": a search of people
	from, to    Date
	searchType  string
	location    string
	page, limit int
}

// validate checks r, whose record type t (ParseRecordType) the caller read.
func validate(r SearchRequest, t ClinicalType) (validated, error) {
	v := validated{recordType: t, searchType: r.SearchType, location: strings.TrimSpace(r.Location), page: 1, limit: DefaultLimit}
	if v.searchType == "" {
		v.searchType = SearchTypePatientRecord
	}
	if v.searchType != SearchTypePatientRecord {
		return v, ErrInvalidSearch.WithMessage("searchType %q is not supported; use %s", clip(r.SearchType, 64), SearchTypePatientRecord)
	}
	if p := r.Page.Page; p != 0 {
		if p < 1 || p > MaxPage {
			return v, invalid("pagination.page must be between 1 and %d", MaxPage)
		}
		v.page = p
	}
	if l := r.Page.Limit; l != 0 {
		if l < 1 || l > MaxLimit {
			return v, invalid("pagination.limit must be between 1 and %d", MaxLimit)
		}
		v.limit = l
	}
	if len(v.location) > 200 {
		return v, invalid("filters.location is too long")
	}
	q, err := ParseQuery(r.Query)
	if err != nil {
		return v, err
	}
	if r.UpdatedTo.Before(r.UpdatedFrom) {
		return v, invalid("filters.dateRange ends before it starts")
	}
	if t == "" {
		q.UpdatedFrom, q.UpdatedTo = r.UpdatedFrom, r.UpdatedTo
	} else {
		v.from, v.to = dateOf(r.UpdatedFrom), dateOf(r.UpdatedTo)
	}
	v.query = q
	return v, nil
}

// dateOf is the calendar day of t; the zero Date for the zero time.
func dateOf(t time.Time) Date {
	if t.IsZero() {
		return Date{}
	}
	y, m, d := t.Date()
	return Date{Year: y, Month: m, Day: d}
}

var genders = map[string]bool{"male": true, "female": true, "other": true, "unknown": true}

// ParseQuery reads the query grammar: free text is a name search; the
// tokens family:, given:, birthdate:, gender:, identifier: (MRN) and phone:
// may be combined ("given:Ana birthdate:1980-02-01"). A token's value may
// be quoted to hold spaces (family:"van der Berg").
func ParseQuery(s string) (PatientQuery, error) {
	var q PatientQuery
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return q, invalid("query is required")
	case len(s) > maxQueryLen:
		return q, invalid("query must be at most %d characters", maxQueryLen)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return q, invalid("query must be plain text")
	}
	fields := map[string]*string{
		"family": &q.Family, "given": &q.Given, "birthdate": &q.BirthDate,
		"gender": &q.Gender, "identifier": &q.Identifier, "phone": &q.Phone,
	}
	var text []string
	for rest := s; rest != ""; {
		word, value, tail, err := nextToken(rest)
		if err != nil {
			return q, err
		}
		rest = tail
		if value == nil {
			text = append(text, word)
			continue
		}
		dst, ok := fields[strings.ToLower(word)]
		switch {
		case !ok:
			return q, invalid("query: unknown field %q; use family:, given:, birthdate:, gender:, identifier: or phone:", word+":")
		case *dst != "":
			return q, invalid("query: %s: is given twice", strings.ToLower(word))
		case *value == "":
			return q, invalid("query: %s: needs a value", strings.ToLower(word))
		}
		*dst = *value
	}
	q.Text = strings.Join(text, " ")
	if q.BirthDate != "" {
		if _, err := time.Parse(time.DateOnly, q.BirthDate); err != nil {
			return q, invalid("query: birthdate: must be YYYY-MM-DD")
		}
	}
	if q.Gender != "" {
		q.Gender = strings.ToLower(q.Gender)
		if !genders[q.Gender] {
			return q, invalid("query: gender: must be male, female, other or unknown")
		}
	}
	return q, nil
}

// nextToken reads one word of s: a plain word (value nil) or field:value,
// where the value may be quoted.
func nextToken(s string) (word string, value *string, rest string, err error) {
	s = strings.TrimLeft(s, " \t")
	end := strings.IndexAny(s, " \t:\"")
	if end < 0 {
		return s, nil, "", nil
	}
	if s[end] == '"' {
		return "", nil, "", invalid("query: a quote may only open a field's value")
	}
	if s[end] != ':' || end == 0 {
		if end == 0 { // ":" at the start of a word
			return "", nil, "", invalid("query: a field name must come before ':'")
		}
		return s[:end], nil, s[end:], nil
	}
	word, s = s[:end], s[end+1:]
	if strings.HasPrefix(s, `"`) {
		closing := strings.IndexByte(s[1:], '"')
		if closing < 0 {
			return "", nil, "", invalid("query: %s: has an unclosed quote", word)
		}
		v := strings.TrimSpace(s[1 : 1+closing])
		return word, &v, s[2+closing:], nil
	}
	stop := strings.IndexAny(s, " \t")
	if stop < 0 {
		stop = len(s)
	}
	v := s[:stop]
	if strings.ContainsAny(v, `:"`) {
		return "", nil, "", invalid("query: %s: value must not hold ':' or '\"' unless quoted", word)
	}
	return word, &v, s[stop:], nil
}
