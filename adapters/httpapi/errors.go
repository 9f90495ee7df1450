package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

// statusOf is the one mapping from a failure kind to an HTTP status.
var statusOf = map[core.Kind]int{
	core.KindInternal:            http.StatusInternalServerError,
	core.KindInvalid:             http.StatusBadRequest,
	core.KindUnauthenticated:     http.StatusUnauthorized,
	core.KindForbidden:           http.StatusForbidden,
	core.KindNotFound:            http.StatusNotFound,
	core.KindConflict:            http.StatusConflict,
	core.KindTooLarge:            http.StatusRequestEntityTooLarge,
	core.KindUnsupportedMedia:    http.StatusUnsupportedMediaType,
	core.KindRangeNotSatisfiable: http.StatusRequestedRangeNotSatisfiable,
	core.KindUnprocessable:       http.StatusUnprocessableEntity,
	core.KindRateLimited:         http.StatusTooManyRequests,
	core.KindBadGateway:          http.StatusBadGateway,
	core.KindUnavailable:         http.StatusServiceUnavailable,
	core.KindTimeout:             http.StatusGatewayTimeout,
}

// statusClientClosed answers a request whose client hung up first.
const statusClientClosed = 499

// errorBody is the contract's error envelope.
type errorBody struct {
	Message string `json:"message"`
	Status  string `json:"status"`
	Data    any    `json:"data"`
	Code    string `json:"code"`
}

var (
	errNotFound         = &core.Error{Kind: core.KindNotFound, Code: "route_not_found", Message: "No such endpoint"}
	errMethodNotAllowed = &core.Error{Kind: core.KindInvalid, Code: "method_not_allowed", Message: "Method not allowed on this endpoint"}
	errInternal         = &core.Error{Kind: core.KindInternal, Code: "internal_error", Message: "Internal server error"}
)

// writeError is the single place that turns an error into a response: the
// kind gives the status, the envelope carries the code and a safe message.
// Internal errors reach the client as internal_error and the log in full.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		// The client hung up and the work stopped with it: not a failure
		// of the service. 499 is nginx's "client closed request"; the log
		// and the metrics show it, nobody reads the body.
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "client went away",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		writeJSON(w, statusClientClosed, errorBody{Message: "The client closed the request", Status: "error", Code: "client_closed_request"})
		return
	}
	var e *core.Error
	if !errors.As(err, &e) || e.Kind == core.KindInternal {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
		e = errInternal
	} else if e.Is(storage.ErrMalwareDetected) { // a security event, with or without an audit event
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "upload refused: malware detected",
			slog.String("request_id", requestID(r.Context())), slog.String("signature", e.Detail["signature"]))
	} else if e.Err != nil {
		level := slog.LevelDebug
		if e.Is(errAuditUnavailable) || e.Is(storage.ErrScannerUnavailable) { // nothing was done: the operator must know
			level = slog.LevelError
		}
		s.log.LogAttrs(r.Context(), level, "request refused",
			slog.String("request_id", requestID(r.Context())), slog.String("error", err.Error()))
	}
	if len(e.Detail) > 0 {
		auditDetailOf(r.Context(), e.Detail)
	}
	status := statusOf[e.Kind]
	if (e.Kind == core.KindRateLimited || e.Kind == core.KindUnavailable) && e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Kind == core.KindUnauthenticated {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	}
	if e.Code == core.ErrInsufficientScope.Code && e.Scope != "" {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+e.Scope+`"`)
	}
	if e == errMethodNotAllowed {
		status = http.StatusMethodNotAllowed
	}
	writeJSON(w, status, errorBody{Message: e.Message, Status: "error", Code: e.Code})
}
