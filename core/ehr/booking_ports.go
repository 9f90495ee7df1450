package ehr

import (
	"context"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out booking_moq_test.go . Locker IdempotencyStore

// Locker serialises the bookings of one agent across every instance of the
// service (PostgreSQL advisory locks), so a check of the agent's calendar
// and the booking that follows it are one step.
type Locker interface {
	WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// IdempotencyStore keeps the outcome of each Idempotency-Key per caller.
type IdempotencyStore interface {
	// Claim records key for subject and the request's fingerprint. For a
	// new key it returns done false, and the caller must Complete or
	// Release it. For a key used before it returns the stored outcome and
	// done true. A key reused for another request is ErrIdempotencyKeyReused;
	// one whose first request is still running is ErrIdempotencyInProgress.
	Claim(ctx context.Context, subject, key, fingerprint string) (outcome []byte, done bool, err error)
	// Complete stores the outcome of a claimed key.
	Complete(ctx context.Context, subject, key string, outcome []byte) error
	// Release forgets a claimed key, so the request may be sent again.
	Release(ctx context.Context, subject, key string) error
}

// The failures of Idempotency-Key handling.
var (
	ErrIdempotencyKeyReused  = &core.Error{Kind: core.KindConflict, Code: "idempotency_key_reused", Message: "This Idempotency-Key was used for a different request"}
	ErrIdempotencyInProgress = &core.Error{Kind: core.KindConflict, Code: "idempotency_in_progress", Message: "A request with this Idempotency-Key is still being processed"}
	ErrInvalidIdempotencyKey = &core.Error{Kind: core.KindInvalid, Code: "invalid_idempotency_key", Message: "Idempotency-Key must be 1 to 255 visible ASCII characters"}
)
