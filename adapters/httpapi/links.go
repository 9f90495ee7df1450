package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
)

// linkRoutes are /api/v1/person-links (the contract's "Person links"):
// bare answers, as search's, never cached. A change is audited and commits
// its event with itself; the listing is not audited (the contract has no
// action for it).
func (s *Server) linkRoutes(r *mux.Router) {
	change := func(action audit.Action, h actingHandler) http.Handler {
		return noStore(s.audited(action, "person_link", s.acting(ehr.UseLinks, h)))
	}
	r.Handle("/api/v1/person-links", change(audit.PersonLink, s.createLink)).Methods(http.MethodPost)
	r.Handle("/api/v1/person-links", noStore(s.authenticate(s.acting(ehr.UseLinks, s.listLinks)))).Methods(http.MethodGet)
	r.Handle("/api/v1/person-links/{id}", change(audit.PersonUnlink, s.deleteLink)).Methods(http.MethodDelete)
}

// linkRecordJSON is one record of a link: a system and its patient id.
type linkRecordJSON struct {
	Source    string `json:"source"`
	PatientID string `json:"patientId"`
}

// linkRequest is the body of POST /api/v1/person-links.
type linkRequest struct {
	Decision string           `json:"decision"`
	Records  []linkRecordJSON `json:"records"`
}

type linkResponse struct {
	ID        string           `json:"id"`
	Decision  string           `json:"decision"`
	Records   []linkRecordJSON `json:"records"`
	CreatedBy string           `json:"createdBy"`
	CreatedAt time.Time        `json:"createdAt"`
}

func newLinkResponse(l ehr.PersonLink) linkResponse {
	out := linkResponse{ID: l.ID, Decision: string(l.Decision), CreatedBy: l.CreatedBy, CreatedAt: l.CreatedAt,
		Records: make([]linkRecordJSON, len(l.Records))}
	for i, r := range l.Records {
		out.Records[i] = linkRecordJSON{Source: r.Source, PatientID: r.PatientID}
	}
	return out
}

func (s *Server) createLink(w http.ResponseWriter, r *http.Request, business string) {
	var req linkRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	lr := ehr.LinkRequest{Business: business, Decision: req.Decision, Records: make([]ehr.SourceRef, len(req.Records))}
	for i, rec := range req.Records {
		lr.Records[i] = ehr.SourceRef{Source: rec.Source, PatientID: rec.PatientID}
	}
	ctx, err := s.auditWithChange(r, http.StatusCreated)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	link, err := s.links.Create(ctx, lr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditResource(r.Context(), link.ID)
	auditDetail(r.Context(), map[string]any{"decision": string(link.Decision)})
	writeJSON(w, http.StatusCreated, newLinkResponse(link))
}

func (s *Server) listLinks(w http.ResponseWriter, r *http.Request, business string) {
	p, err := linkPage(r.URL.Query())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.links.List(r.Context(), business, p)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newPage(page, newLinkResponse))
}

// linkPage reads page and limit: absent is the core's default; present,
// each must be a whole number of at least 1 (the core checks the maximum).
func linkPage(v url.Values) (ehr.PageRequest, error) {
	q := &query{v: v}
	p := ehr.PageRequest{Page: q.int("page"), Limit: q.int("limit")}
	if len(q.errs) == 0 && ((v.Has("page") && p.Page < 1) || (v.Has("limit") && p.Limit < 1)) {
		q.errs = append(q.errs, "page and limit must be at least 1")
	}
	if len(q.errs) > 0 {
		return p, ehr.ErrInvalidLink.WithMessage("Validation failed: %s", strings.Join(q.errs, "; "))
	}
	return p, nil
}

func (s *Server) deleteLink(w http.ResponseWriter, r *http.Request, business string) {
	id := pathUUID(r)
	ctx, err := s.auditWithChange(r, http.StatusNoContent)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	link, err := s.links.Delete(ctx, business, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditDetail(r.Context(), map[string]any{"decision": string(link.Decision)})
	w.WriteHeader(http.StatusNoContent)
}
