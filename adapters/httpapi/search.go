package httpapi

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// searchRequest is the body of POST /api/v1/search.
type searchRequest struct {
	Query      string `json:"query"`
	SearchType string `json:"searchType"`
	Filters    struct {
		DateRange  string `json:"dateRange"`
		Location   string `json:"location"`
		RecordType string `json:"recordType"`
	} `json:"filters"`
	Pagination struct {
		Page  *int `json:"page"`  // nil: absent (the core's default)
		Limit *int `json:"limit"` // nil: absent (the core's default)
	} `json:"pagination"`
}

// parse turns the body into the core's typed request: the pagination
// values given (each must be positive; absent is the core's default) and
// the dates of filters.dateRange. The core checks the rest.
func (req searchRequest) parse() (ehr.SearchRequest, error) {
	sr := ehr.SearchRequest{Query: req.Query, SearchType: req.SearchType,
		Location: req.Filters.Location, RecordType: req.Filters.RecordType}
	var err error
	if sr.Page.Page, err = pageValue(req.Pagination.Page, "page", ehr.MaxPage); err != nil {
		return sr, err
	}
	if sr.Page.Limit, err = pageValue(req.Pagination.Limit, "limit", ehr.MaxLimit); err != nil {
		return sr, err
	}
	if req.Filters.DateRange != "" {
		if sr.UpdatedFrom, sr.UpdatedTo, err = parseDateRange(req.Filters.DateRange); err != nil {
			return sr, err
		}
	}
	return sr, nil
}

// pageValue is a pagination value of the body: 0 when absent (the core's
// default); given, it must be at least 1 (the core checks the maximum).
func pageValue(v *int, name string, maxValue int) (int, error) {
	switch {
	case v == nil:
		return 0, nil
	case *v < 1:
		return 0, ehr.ErrInvalidSearch.WithMessage("pagination.%s must be between 1 and %d", name, maxValue)
	}
	return *v, nil
}

// parseDateRange reads filters.dateRange, YYYY-MM-DD/YYYY-MM-DD (the core
// checks that it does not end before it starts).
func parseDateRange(s string) (from, to time.Time, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		from, err = time.Parse(time.DateOnly, a)
	}
	if ok && err == nil {
		to, err = time.Parse(time.DateOnly, b)
	}
	if !ok || err != nil {
		return time.Time{}, time.Time{}, ehr.ErrInvalidSearch.WithMessage("filters.dateRange must be YYYY-MM-DD/YYYY-MM-DD")
	}
	return from, to, nil
}

type searchResponse struct {
	RequestID string         `json:"requestId"`
	Status    string         `json:"status"`
	Data      searchData     `json:"data"`
	Metadata  searchMetadata `json:"metadata"`
}

// searchData is the page: Results holds people ([]personResponse), or
// the record items of a record search ([]recordResponse); never null.
type searchData struct {
	Results    any `json:"results"`
	TotalCount int `json:"totalCount"`
	Page       int `json:"page"`
	Limit      int `json:"limit"`
}

type searchMetadata struct {
	SearchTime string            `json:"searchTime"`
	Sources    []string          `json:"sources"`
	CacheHit   bool              `json:"cacheHit"`
	Errors     []sourceErrorJSON `json:"errors,omitempty"`
}

// personResponse is one result item: one person, with every EHR record of
// them in sources.
type personResponse struct {
	ID          string           `json:"id"`
	Source      string           `json:"source"`
	Sources     []sourceRefJSON  `json:"sources"`
	Name        nameJSON         `json:"name"`
	BirthDate   *string          `json:"birthDate"`
	Gender      *string          `json:"gender"`
	Identifiers []identifierJSON `json:"identifiers"`
	Telecom     []telecomJSON    `json:"telecom"`
	Address     []addressJSON    `json:"address"`
	RecordType  string           `json:"recordType"`
	LastUpdated *time.Time       `json:"lastUpdated"`
	// Match is null for a person of one record.
	Match           *matchJSON          `json:"match"`
	PossibleMatches []possibleMatchJSON `json:"possibleMatches"`
}

// matchJSON tells why a person's records are one.
type matchJSON struct {
	Grade   string   `json:"grade"`
	Score   float64  `json:"score"`
	Reasons []string `json:"reasons"`
}

// possibleMatchJSON names another person of the answer who is probably
// this one.
type possibleMatchJSON struct {
	PersonID string   `json:"personId"`
	Score    float64  `json:"score"`
	Reasons  []string `json:"reasons"`
}

func newMatch(m *ehr.Match) *matchJSON {
	if m == nil {
		return nil
	}
	return &matchJSON{Grade: string(m.Grade), Score: roundScore(m.Score), Reasons: nonNilStrings(m.Reasons)}
}

func newPossibleMatch(p ehr.PossibleMatch) possibleMatchJSON {
	return possibleMatchJSON{PersonID: p.PersonID, Score: roundScore(p.Score), Reasons: nonNilStrings(p.Reasons)}
}

// roundScore keeps four decimals of a score: more would only show noise.
func roundScore(f float64) float64 { return math.Round(f*1e4) / 1e4 }

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func newPersonResponse(p ehr.Person) personResponse {
	r := personResponse{
		ID: p.ID, Sources: convertAll(p.Sources, newSourceRef), Name: newName(p.Name),
		BirthDate: optional(p.BirthDate), Gender: optional(p.Gender),
		Identifiers: convertAll(p.Identifiers, newIdentifier), Telecom: convertAll(p.Telecom, newTelecom),
		Address: convertAll(p.Address, newAddress), RecordType: "patient", LastUpdated: optionalUTC(p.LastUpdated),
		Match: newMatch(p.Match), PossibleMatches: convertAll(p.PossibleMatches, newPossibleMatch),
	}
	if r.PossibleMatches == nil {
		r.PossibleMatches = []possibleMatchJSON{}
	}
	if len(p.Sources) > 0 {
		r.Source = p.Sources[0].Source
	}
	return r
}

// search is POST /api/v1/search. Validation and authentication failures use
// the error envelope; when every EHR failed the search response itself is
// sent with 502 (504 when all timed out).
func (s *Server) search(w http.ResponseWriter, r *http.Request, business string) {
	var req searchRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A record search is audited as one of its type from here on, refused
	// or not (the request's validation stays the core's).
	clinical, isRecords := ehr.ParseClinicalType(strings.ToLower(req.Filters.RecordType))
	if isRecords {
		auditResourceType(r.Context(), string(clinical))
		auditDetail(r.Context(), map[string]any{"recordType": clinical.Snake()})
	}
	sr, err := req.parse()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sr.Business = business
	res, err := s.searcher.Search(r.Context(), sr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := newSearchResponse(res)
	detail := map[string]any{"results": len(res.Results), "sources": res.Sources, "cacheHit": res.CacheHit}
	if res.RecordType != "" {
		detail["results"], detail["recordType"] = len(res.Records), res.RecordType.Snake()
	}
	auditDetail(r.Context(), detail)
	status := http.StatusOK
	switch {
	case res.Status == ehr.StatusError && res.AllTimedOut():
		status = http.StatusGatewayTimeout
	case res.Status == ehr.StatusError:
		status = http.StatusBadGateway
	}
	writeJSON(w, status, out)
}

// newSearchResponse is res in the wire shape: a page of people, or of
// record items when res is a record search's.
func newSearchResponse(res *ehr.SearchResult) searchResponse {
	out := searchResponse{
		RequestID: res.RequestID,
		Status:    res.Status,
		Data:      searchData{TotalCount: res.TotalCount, Page: res.Page, Limit: res.Limit},
		Metadata:  searchMetadata{SearchTime: fmt.Sprintf("%dms", res.SearchTime.Milliseconds()), Sources: res.Sources, CacheHit: res.CacheHit, Errors: newSourceErrors(res.Errors)},
	}
	if res.RecordType != "" {
		out.Data.Results = convertEach(res.Records, newRecordResponse)
	} else {
		out.Data.Results = convertEach(res.Results, newPersonResponse)
	}
	return out
}
