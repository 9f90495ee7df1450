package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core"
)

// requestInfo is what the outermost middleware knows of a request; one
// context value carries it to the handlers and back.
type requestInfo struct {
	id    string
	route string       // the matched route's pattern, set by routeName
	actor string       // the caller's subject, set by authenticate
	audit *auditRecord // set on audited routes
}

type infoKey struct{}

var validRequestID = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// requestIDs makes request ids without a system call per request: a random
// prefix per server and a counter ("3f9a1c2e7b4d5a60-1f").
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (r *requestIDs) next() string {
	return r.prefix + strconv.FormatUint(r.n.Add(1), 16)
}

// requestID returns the id of the request being served.
func requestID(ctx context.Context) string {
	if i, ok := ctx.Value(infoKey{}).(*requestInfo); ok {
		return i.id
	}
	return ""
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// observe is the outermost middleware: it sets the request id (the
// client's when well-formed, a new one otherwise) and the headers every
// response carries, turns a panic into a 500 (logged at ERROR with its
// stack), and records one JSON
// access-log line, the request metrics by route pattern and, with a
// tracer, the request's span (trace.go).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{id: r.Header.Get("X-Request-Id"), route: "unmatched"}
		if !validRequestID.MatchString(info.id) {
			info.id = s.ids.next()
		}
		w.Header().Set("X-Request-Id", info.id)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		ctx, span := s.startSpan(r)
		r = r.WithContext(context.WithValue(ctx, infoKey{}, info))
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			v := recover()
			if v == http.ErrAbortHandler {
				panic(v)
			}
			if v != nil {
				s.log.LogAttrs(r.Context(), slog.LevelError, "panic", slog.String("request_id", info.id),
					slog.String("route", info.route), slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
				if sw.status == 0 {
					s.writeError(sw, r, errInternal)
				}
			}
			if sw.status == 0 {
				sw.status = http.StatusOK
			}
			elapsed := time.Since(start)
			s.metrics.observe(info.route, r.Method, sw.status, elapsed)
			s.accessLog(r.Context(), info, r.Method, sw, elapsed)
			endSpan(span, info, r.Method, sw.status)
		}()
		next.ServeHTTP(sw, r)
	})
}

// accessLog writes the request's log line. The record is built by hand
// with no caller (pc 0): Logger.LogAttrs would walk the stack for a source
// location the JSON handler does not print, on every request.
func (s *Server) accessLog(ctx context.Context, info *requestInfo, method string, sw *statusWriter, elapsed time.Duration) {
	h := s.log.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	rec := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
	rec.AddAttrs(
		slog.String("request_id", info.id),
		slog.String("method", method),
		slog.String("route", info.route),
		slog.Int("status", sw.status),
		slog.Int64("bytes", sw.bytes),
		durationMS(elapsed))
	_ = h.Handle(ctx, rec) // a log line that cannot be written is not the client's failure
}

// durationMS is the duration_ms attribute of a log line: d in
// milliseconds, a number with microsecond precision (as the EHR clients'
// log lines).
func durationMS(d time.Duration) slog.Attr {
	return slog.Float64("duration_ms", float64(d.Microseconds())/1000)
}

// routeName stores the matched route's pattern for observe.
func routeName(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
			if t, err := mux.CurrentRoute(r).GetPathTemplate(); err == nil {
				i.route = t
			}
		}
		next.ServeHTTP(w, r)
	})
}

// cors answers browsers from the exact allowed origins only; without any,
// no CORS header is ever sent.
func (s *Server) cors(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" || !slices.Contains(s.corsOrigins, origin) {
			next.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", origin)
		h.Add("Vary", "Origin")
		h.Set("Access-Control-Expose-Headers", "X-Request-Id, Content-Disposition, Content-Range, ETag, Retry-After")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
			h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Idempotency-Key, Range, User-Type, X-Request-Id")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// noStore keeps every answer of a route that carries patient or EHR data
// (search, appointments, agents, blobs), errors included, out of every
// cache. A handler may ask for more: downloads are "private, no-store".
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

var errMissingToken = &core.Error{Kind: core.KindUnauthenticated, Code: "missing_token", Message: "Authorization: Bearer <token> is required"}

// authenticate requires a valid bearer token and puts the caller in the
// request's context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		actor, err := s.caller(r)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, withCaller(r, actor))
	})
}

// caller verifies the request's bearer token and returns the caller.
func (s *Server) caller(r *http.Request) (core.Actor, error) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return core.Actor{}, errMissingToken
	}
	return s.auth.Authenticate(r.Context(), token)
}

// withCaller is r with actor in its context and in the request's info.
func withCaller(r *http.Request, actor core.Actor) *http.Request {
	if i, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		i.actor = actor.Subject
	}
	return r.WithContext(core.WithActor(r.Context(), actor))
}
