package httpapi

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

// memberResponse is a member of a business as clients see it.
type memberResponse struct {
	Subject   string    `json:"subject"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

func newMemberResponse(m business.Member) memberResponse {
	return memberResponse{Subject: m.Subject, Role: string(m.Role), CreatedAt: m.CreatedAt.UTC()}
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) {
	ms, err := s.business.Members(r.Context(), mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]memberResponse, len(ms))
	for i, m := range ms {
		out[i] = newMemberResponse(m)
	}
	writeSuccess(w, http.StatusOK, "Members fetched successfully", out)
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request) {
	// A missing field is empty, which the core refuses (after telling a
	// non-member that the business does not exist).
	var req struct {
		Subject string `json:"subject"`
		Role    string `json:"role"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	m, err := s.business.AddMember(r.Context(), mux.Vars(r)["id"], req.Subject, core.Role(req.Role))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusCreated, "Member added successfully", newMemberResponse(m))
}

func (s *Server) changeMember(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Role string `json:"role"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	vars := mux.Vars(r)
	m, err := s.business.ChangeMemberRole(r.Context(), vars["id"], vars["subject"], core.Role(req.Role))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Member updated successfully", newMemberResponse(m))
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) {
	vars := mux.Vars(r)
	if err := s.business.RemoveMember(r.Context(), vars["id"], vars["subject"]); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Member removed successfully", map[string]string{"subject": vars["subject"]})
}
