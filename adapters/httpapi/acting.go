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

// actingHandler is a handler of a request that acts for a business, the
// acting business ("" none), which it names in what it asks of the core.
type actingHandler func(w http.ResponseWriter, r *http.Request, business string)

// acting resolves the acting business of a search, appointment, agent,
// person-link or webhook request (use tells which) from its X-Business-Id
// header and the caller, records it in the request's audit event, and
// hands it to next. The caller must be authenticated already. Without a
// Tenancy (unit tests) it is the header's.
func (s *Server) acting(use ehr.Use, next actingHandler) http.HandlerFunc {
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
		id, err := s.tenancy.Act(r.Context(), requested, use)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		auditBusiness(r.Context(), id)
		next(w, r, id)
	}
}
