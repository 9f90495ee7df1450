// Package core holds what the domain cores share: the error model and the
// caller (Actor). It imports only the standard library.
package core

import (
	"errors"
	"fmt"
	"time"
)

// Kind classifies a failure; the HTTP adapter maps each kind to one status.
type Kind uint8

const (
	KindInternal            Kind = iota // 500, details only in logs
	KindInvalid                         // 400
	KindUnauthenticated                 // 401
	KindForbidden                       // 403
	KindNotFound                        // 404
	KindConflict                        // 409
	KindTooLarge                        // 413
	KindUnsupportedMedia                // 415
	KindRangeNotSatisfiable             // 416
	KindUnprocessable                   // 422
	KindRateLimited                     // 429
	KindBadGateway                      // 502
	KindUnavailable                     // 503
	KindTimeout                         // 504
)

// Error is the one error type the cores return. Code is a stable snake_case
// identifier for clients; Message is human text safe to show; Err is the
// cause, for logs only.
type Error struct {
	Kind    Kind
	Code    string
	Message string
	Err     error
	// RetryAfter tells a rate-limited client, or one refused while a
	// dependency is busy, when to try again (0: unsaid).
	RetryAfter time.Duration
	// Scope names a scope that would allow the operation (insufficient_scope).
	Scope string
	// Detail holds small facts free of patient data that the request's
	// audit event records (detail), such as the signature of a refused
	// upload.
	Detail map[string]string
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is a *Error with the same code, so a sentinel
// such as ErrBlobNotFound matches copies made with WithMessage or Wrap.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Kind == e.Kind
}

// WithMessage returns a copy of e with a more specific message.
func (e *Error) WithMessage(format string, args ...any) *Error {
	c := *e
	c.Message = fmt.Sprintf(format, args...)
	return &c
}

// Wrap returns a copy of e that carries cause (for logs).
func (e *Error) Wrap(cause error) *Error {
	c := *e
	c.Err = cause
	return &c
}

// Invalid is a validation failure with the given code and message.
func Invalid(code, format string, args ...any) *Error {
	return &Error{Kind: KindInvalid, Code: code, Message: fmt.Sprintf(format, args...)}
}

// KindOf returns the kind of the first *Error in err's chain, or
// KindInternal when there is none.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}
