package httpapi

import (
	"fmt"
	"net/http"
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

type searchResponse struct {
	RequestID string         `json:"requestId"`
	Status    string         `json:"status"`
	Data      searchData     `json:"data"`
	Metadata  searchMetadata `json:"metadata"`
}

type searchData struct {
	Results    []personResponse `json:"results"`
	TotalCount int              `json:"totalCount"`
	Page       int              `json:"page"`
	Limit      int              `json:"limit"`
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
}

func newPersonResponse(p ehr.Person) personResponse {
	r := personResponse{
		ID: p.ID, Sources: convertAll(p.Sources, newSourceRef), Name: newName(p.Name),
		BirthDate: optional(p.BirthDate), Gender: optional(p.Gender),
		Identifiers: convertAll(p.Identifiers, newIdentifier), Telecom: convertAll(p.Telecom, newTelecom),
		Address: convertAll(p.Address, newAddress), RecordType: "patient",
	}
	if len(p.Sources) > 0 {
		r.Source = p.Sources[0].Source
	}
	if !p.LastUpdated.IsZero() {
		t := p.LastUpdated.UTC()
		r.LastUpdated = &t
	}
	return r
}

// search is POST /api/v1/search. Validation and authentication failures use
// the error envelope; when every EHR failed the search response itself is
// sent with 502 (504 when all timed out).
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	var req searchRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := s.searcher.Search(r.Context(), ehr.SearchRequest{
		Query: req.Query, SearchType: req.SearchType, DateRange: req.Filters.DateRange,
		Location: req.Filters.Location, RecordType: req.Filters.RecordType,
		Page: req.Pagination.Page, Limit: req.Pagination.Limit,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := searchResponse{
		RequestID: res.RequestID,
		Status:    res.Status,
		Data:      searchData{Results: make([]personResponse, len(res.Results)), TotalCount: res.TotalCount, Page: res.Page, Limit: res.Limit},
		Metadata:  searchMetadata{SearchTime: fmt.Sprintf("%dms", res.SearchTime.Milliseconds()), Sources: res.Sources, CacheHit: res.CacheHit, Errors: newSourceErrors(res.Errors)},
	}
	for i, p := range res.Results {
		out.Data.Results[i] = newPersonResponse(p)
	}
	auditDetail(r.Context(), map[string]any{"results": len(res.Results), "sources": res.Sources, "cacheHit": res.CacheHit})
	status := http.StatusOK
	switch {
	case res.Status == ehr.StatusError && res.AllTimedOut():
		status = http.StatusGatewayTimeout
	case res.Status == ehr.StatusError:
		status = http.StatusBadGateway
	}
	writeJSON(w, status, out)
}
