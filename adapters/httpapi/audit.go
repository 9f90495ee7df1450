package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
)

// Auditor keeps the audit trail (adapters/postgres.AuditLog).
type Auditor interface {
	// Record returns once e is committed.
	Record(ctx context.Context, e audit.Event) error
	// Ready reports whether an event can be written now.
	Ready(ctx context.Context) error
}

// noAudit records nothing: for a Config without an Auditor (unit tests).
type noAudit struct{}

func (noAudit) Record(context.Context, audit.Event) error { return nil }
func (noAudit) Ready(context.Context) error               { return nil }

var errAuditUnavailable = &core.Error{Kind: core.KindUnavailable, Code: "audit_unavailable",
	Message: "The audit trail cannot be written; nothing was done, try again later"}

// auditTimeout bounds the readiness check of a request that changes
// something.
const auditTimeout = 5 * time.Second

// auditRecord is what a handler tells the audit trail of its request.
type auditRecord struct {
	action       audit.Action
	resourceType string
	resourceID   string
	detail       map[string]any
}

// auditOf returns the audit record of the request in ctx, or nil.
func auditOf(ctx context.Context) *auditRecord {
	if i, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return i.audit
	}
	return nil
}

// auditResource names the resource a request acted on, once its handler
// knows it (a new blob's id, a booked appointment's).
func auditResource(ctx context.Context, id string) {
	if a := auditOf(ctx); a != nil {
		a.resourceID = id
	}
}

// auditDetail sets the small, patient-data-free detail of the event.
func auditDetail(ctx context.Context, detail map[string]any) {
	if a := auditOf(ctx); a != nil {
		a.detail = detail
	}
}

// resourceIDs are the ids the audit trail takes from a path: the service's
// own blob and appointment ids. Anything else a client puts there is left
// out rather than recorded.
var resourceIDs = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

// audited records one audit event for every request of the route, allowed
// or not. The event is committed before the status line is sent, so no
// answer, and no patient data or file byte, leaves without its event; when
// the event cannot be committed the answer is 503 audit_unavailable
// instead. A request that changes something is refused with 503 before it
// runs when the trail cannot be written, so nothing is done unaudited.
func (s *Server) audited(action audit.Action, resourceType string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := r.Context().Value(infoKey{}).(*requestInfo) // set by observe, which wraps every route
		info.audit = &auditRecord{action: action, resourceType: resourceType}
		if id := mux.Vars(r)["id"]; resourceIDs.MatchString(id) {
			info.audit.resourceID = id
		}
		if action.Changes() {
			ctx, cancel := context.WithTimeout(r.Context(), auditTimeout)
			err := s.auditor.Ready(ctx)
			cancel()
			if err != nil {
				s.log.LogAttrs(r.Context(), slog.LevelError, "audit trail not writable; request refused",
					slog.String("request_id", info.id), slog.String("action", string(action)), slog.String("error", err.Error()))
				s.writeError(w, r, errAuditUnavailable)
				return
			}
		}
		aw := &auditWriter{ResponseWriter: w, s: s, r: r, info: info}
		defer func() {
			if v := recover(); v != nil {
				if !aw.decided && v != http.ErrAbortHandler {
					s.writeError(aw, r, errInternal)
				}
				panic(v)
			}
		}()
		next.ServeHTTP(aw, r)
		if !aw.decided {
			aw.WriteHeader(http.StatusOK)
		}
	})
}

// auditWriter commits the request's audit event when the handler decides
// the status, before anything is sent.
type auditWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	info    *requestInfo
	decided bool
	failed  bool // the event was not committed: the handler's answer is dropped
}

var errNotAudited = errors.New("the answer was replaced: its audit event could not be committed")

func (w *auditWriter) WriteHeader(status int) {
	if w.decided {
		return
	}
	w.decided = true
	if err := w.commit(status); err != nil {
		w.failed = true
		w.s.log.LogAttrs(w.r.Context(), slog.LevelError, "audit event not committed; answer replaced by 503",
			slog.String("request_id", w.info.id), slog.String("action", string(w.info.audit.action)),
			slog.Int("status", status), slog.String("error", err.Error()))
		// What the handler set describes the answer that is not sent
		// (Content-Disposition, ETag, ...); the request's own headers stay.
		h := w.ResponseWriter.Header()
		for k := range h {
			if k != "X-Request-Id" && k != "X-Content-Type-Options" && k != "Vary" && !strings.HasPrefix(k, "Access-Control-") {
				delete(h, k)
			}
		}
		w.s.writeError(w.ResponseWriter, w.r, errAuditUnavailable)
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *auditWriter) Write(p []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.failed {
		return 0, errNotAudited
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// commit records the event. It does not follow the request's context (a
// client that hung up is still audited); the auditor bounds its own wait.
func (w *auditWriter) commit(status int) error {
	a := w.info.audit
	return w.s.auditor.Record(context.WithoutCancel(w.r.Context()), audit.Event{
		At:           time.Now(),
		RequestID:    w.info.id,
		Actor:        w.info.actor,
		Action:       a.action,
		ResourceType: a.resourceType,
		ResourceID:   a.resourceID,
		Outcome:      audit.OutcomeOf(status),
		Status:       status,
		Detail:       a.detail,
	})
}
