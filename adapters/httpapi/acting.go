package httpapi

import (
	"net/http"
	"strings"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// headerBusiness names the business a request acts for (the contract's
// acting business).
const headerBusiness = "X-Business-Id"

var errInvalidBusinessID = &core.Error{Kind: core.KindInvalid, Code: "invalid_business_id",
	Message: "X-Business-Id must be a business id (a UUID)"}

// acting resolves the acting business of a search, appointment or agent
// request (use tells which) from its X-Business-Id header and the caller,
// records it in the request's audit event, and hands it to next in the
// request's context. The caller must be authenticated already.
func (s *Server) acting(use ehr.Use, next http.HandlerFunc) http.HandlerFunc {
	return s.actingFor(use, func(w http.ResponseWriter, r *http.Request, _ string) { next(w, r) })
}

// actingFor is acting for a handler that takes the acting business as a
// parameter ("" none). Without a Tenancy (unit tests) it is the header's.
func (s *Server) actingFor(use ehr.Use, next func(w http.ResponseWriter, r *http.Request, business string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		requested := r.Header.Get(headerBusiness)
		if requested != "" && !core.IsUUID(requested) {
			s.writeError(w, r, errInvalidBusinessID)
			return
		}
		if s.tenancy == nil {
			next(w, r, strings.ToLower(requested))
			return
		}
		ctx, id, err := s.tenancy.Act(r.Context(), requested, use)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		auditBusiness(ctx, id)
		next(w, r.WithContext(ctx), id)
	}
}
