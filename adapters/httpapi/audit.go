package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
)

// Auditor keeps the audit trail (app wires adapters/postgres.AuditLog).
type Auditor interface {
	// Record returns once e is committed.
	Record(ctx context.Context, e audit.Event) error
	// Ready reports whether an event can be written now.
	Ready(ctx context.Context) error
	// Unauthenticated counts a request refused with 401 from the client
	// address addr; e is its event. The trail records such refusals later,
	// at most once per address, action and minute (audit.Tally), so it
	// does not wait.
	Unauthenticated(addr string, e audit.Event)
}

// noAudit records nothing: for a Config without an Auditor (unit tests).
type noAudit struct{}

func (noAudit) Record(context.Context, audit.Event) error { return nil }
func (noAudit) Ready(context.Context) error               { return nil }
func (noAudit) Unauthenticated(string, audit.Event)       {}

var errAuditUnavailable = audit.ErrUnavailable

// auditTimeout bounds the writes a change waits for before it is made.
const auditTimeout = 5 * time.Second

// auditRecord is what a handler tells the audit trail of its request.
type auditRecord struct {
	action       audit.Action
	resourceType string
	resourceID   string
	businessID   string
	detail       map[string]any
	// pending is the final event when it is to be committed with the
	// change (auditWithChange), nil otherwise.
	pending *audit.Pending
}

// auditOf returns the audit record of the request in ctx, or nil.
func auditOf(ctx context.Context) *auditRecord {
	if i, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return i.audit
	}
	return nil
}

// auditResource names the resource a request acted on, once its handler
// has parsed or made its id (a blob id, an appointment id): the trail
// never records an id that did not parse.
func auditResource(ctx context.Context, id string) {
	if a := auditOf(ctx); a != nil {
		a.resourceID = id
	}
}

// auditResourceType names the type of resource the request acts on when
// its handler learns it from the request (a record search's FHIR type,
// Observation) rather than from its route.
func auditResourceType(ctx context.Context, resourceType string) {
	if a := auditOf(ctx); a != nil {
		a.resourceType = resourceType
	}
}

// auditDetail sets the small, patient-data-free detail of the event.
func auditDetail(ctx context.Context, detail map[string]any) {
	if a := auditOf(ctx); a != nil {
		a.detail = detail
	}
}

// auditDetailOf adds the facts a refusal carries (core.Error.Detail) to
// the detail of the event.
func auditDetailOf(ctx context.Context, facts map[string]string) {
	a := auditOf(ctx)
	if a == nil {
		return
	}
	if a.detail == nil {
		a.detail = make(map[string]any, len(facts))
	}
	for k, v := range facts {
		a.detail[k] = v
	}
}

// pathUUID is the route's id (a subscription's, a person link's), lower
// case, named in the request's audit event when it is a UUID (the trail
// never names an id that did not parse).
func pathUUID(r *http.Request) string {
	id := strings.ToLower(mux.Vars(r)["id"])
	if core.IsUUID(id) {
		auditResource(r.Context(), id)
	}
	return id
}

// auditBusiness sets the business the request acted for (the acting
// business, a blob's business), recorded as the event's businessId.
func auditBusiness(ctx context.Context, id string) {
	if a := auditOf(ctx); a != nil {
		a.businessID = id
	}
}

// auditEvent is the request's event, answered with status.
func (i *requestInfo) auditEvent(status int) audit.Event {
	a := i.audit
	return audit.Event{
		At:           time.Now(),
		RequestID:    i.id,
		Actor:        i.actor,
		Action:       a.action,
		ResourceType: a.resourceType,
		ResourceID:   a.resourceID,
		BusinessID:   a.businessID,
		Outcome:      audit.OutcomeOf(status),
		Status:       status,
		Detail:       a.detail,
	}
}

// audited authenticates the caller and records one audit event for every
// request of the route, allowed or not. A request refused for want of a
// valid token (401) is answered at once and counted (Auditor.Unauthenticated):
// anonymous traffic never waits for the trail nor fills it. Any other
// answer waits for its event: the event is committed before the status
// line is sent, so no answer, and no patient data or file byte, leaves
// without it; when it cannot be committed the answer is 503
// audit_unavailable instead. A handler that changes something commits its
// event with the change (auditWithChange) or records that it started
// before calling the EHR (auditStarted).
func (s *Server) audited(action audit.Action, resourceType string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := r.Context().Value(infoKey{}).(*requestInfo) // set by observe, which wraps every route
		actor, err := s.caller(r)
		if err != nil && core.KindOf(err) == core.KindUnauthenticated {
			s.auditor.Unauthenticated(clientAddress(r), audit.Event{At: time.Now(), RequestID: info.id,
				Action: action, ResourceType: resourceType, Outcome: audit.Denied, Status: http.StatusUnauthorized})
			s.writeError(w, r, err)
			return
		}
		info.audit = &auditRecord{action: action, resourceType: resourceType}
		aw := &auditWriter{ResponseWriter: w, s: s, r: r, info: info}
		defer func() {
			if v := recover(); v != nil {
				if !aw.decided && v != http.ErrAbortHandler {
					s.writeError(aw, r, errInternal)
				}
				panic(v)
			}
		}()
		if err != nil { // the authenticator failed otherwise: audited as any answer
			s.writeError(aw, r, err)
		} else {
			next.ServeHTTP(aw, withCaller(r, actor))
		}
		if !aw.decided {
			aw.WriteHeader(http.StatusOK)
		}
	})
}

// clientAddress is the IP address the request came from (behind a proxy,
// the proxy's).
func clientAddress(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// auditWithChange returns the request's context carrying its final event,
// answered with status, for the repository that makes the change to
// commit in the change's own transaction (audit.Pending): the change and
// its event are committed together or not at all. It refuses the request
// first when the trail cannot be written now, so that no file is received
// in vain.
func (s *Server) auditWithChange(r *http.Request, status int) (context.Context, error) {
	info := r.Context().Value(infoKey{}).(*requestInfo)
	ctx, cancel := context.WithTimeout(r.Context(), auditTimeout)
	err := s.auditor.Ready(ctx)
	cancel()
	if err != nil {
		return nil, errAuditUnavailable.Wrap(fmt.Errorf("audit trail not writable: %w", err))
	}
	info.audit.pending = &audit.Pending{Event: info.auditEvent(status)}
	return audit.WithPending(r.Context(), info.audit.pending), nil
}

// auditStarted records that the request is about to change an appointment
// in the EHR (outcome started), before the EHR is called: what the EHR does
// cannot be rolled back with the event. The final event follows as for any
// request.
func (s *Server) auditStarted(r *http.Request) error {
	info := r.Context().Value(infoKey{}).(*requestInfo)
	e := info.auditEvent(0)
	e.Outcome = audit.Started
	ctx, cancel := context.WithTimeout(r.Context(), auditTimeout)
	defer cancel()
	if err := s.auditor.Record(ctx, e); err != nil {
		return errAuditUnavailable.Wrap(fmt.Errorf("record the started event: %w", err))
	}
	return nil
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
	if p := w.info.audit.pending; p != nil && p.Committed() {
		// Committed with the change; its answer is the one the event says.
		if status != p.Event.Status {
			w.s.log.LogAttrs(w.r.Context(), slog.LevelError, "answer differs from its committed audit event",
				slog.String("request_id", w.info.id), slog.Int("status", status), slog.Int("event_status", p.Event.Status))
		}
		w.ResponseWriter.WriteHeader(status)
		return
	}
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
	return w.s.auditor.Record(context.WithoutCancel(w.r.Context()), w.info.auditEvent(status))
}
