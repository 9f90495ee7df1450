package ehr

import (
	"context"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
)

//go:generate go tool moq -rm -out booking_moq_test.go . Locker IdempotencyStore BookingLog Events

// Locker serialises the bookings of one agent across every instance of the
// service (PostgreSQL advisory locks), so a check of the agent's calendar
// and the booking that follows it are one step. Its wait is bounded: a key
// held by another booking for too long is ErrAgentBusy, too many bookings
// in progress at once is ErrBookingBusy; neither runs fn.
type Locker interface {
	WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// Booking records who booked an appointment through the service: a
// patient-context caller sees and changes only the appointments booked with
// its subject.
type Booking struct {
	Subject       string
	AppointmentID string
	// Event is the appointment.booked event of the booking, written with
	// the record (a replayed request records nothing, so emits nothing).
	Event event.Event
}

// IdempotencyStore keeps the outcome of each Idempotency-Key per caller.
// An outcome holds ids, statuses and failure codes only, never patient
// data, and the fingerprint is keyed (HMAC): nothing stored reveals who the
// appointment is for.
type IdempotencyStore interface {
	// Claim records key for subject and the request's fingerprint, the
	// first of fingerprints (the request's fingerprint under each service
	// key, the current key's first). For a new key it returns done false,
	// and the caller must Complete or Release it. For a key used before
	// with any of fingerprints it returns the stored outcome and done true.
	// A key reused for another request is ErrIdempotencyKeyReused; one
	// whose first request is still running is ErrIdempotencyInProgress.
	Claim(ctx context.Context, subject, key string, fingerprints []string) (outcome []byte, done bool, err error)
	// Complete stores the outcome of a claimed key and, when booking is not
	// nil, records the booking, in one transaction.
	Complete(ctx context.Context, subject, key string, outcome []byte, booking *Booking) error
	// Release forgets a claimed key, so the request may be sent again.
	Release(ctx context.Context, subject, key string) error
}

// BookingLog keeps who booked which appointment, across every instance.
type BookingLog interface {
	// Record stores b.
	Record(ctx context.Context, b Booking) error
	// BookedBy returns the ids of the appointments subject booked, oldest
	// first.
	BookedBy(ctx context.Context, subject string) ([]string, error)
	// IsBookedBy reports whether subject booked appointment id.
	IsBookedBy(ctx context.Context, subject, id string) (bool, error)
}

// Events writes the events of changes the EHR confirmed (cancel,
// reschedule) to the outbox.
type Events interface {
	Emit(ctx context.Context, e event.Event) error
}

// The failures of a bounded lock wait. Both are worth a retry: they are
// never kept as an Idempotency-Key's outcome.
var (
	ErrAgentBusy   = &core.Error{Kind: core.KindConflict, Code: "agent_busy", Message: "Another booking of this agent is in progress; try again"}
	ErrBookingBusy = &core.Error{Kind: core.KindUnavailable, Code: "booking_busy", Message: "Too many bookings are in progress; try again"}
)

// The failures of Idempotency-Key handling.
var (
	ErrIdempotencyKeyReused  = &core.Error{Kind: core.KindConflict, Code: "idempotency_key_reused", Message: "This Idempotency-Key was used for a different request"}
	ErrIdempotencyInProgress = &core.Error{Kind: core.KindConflict, Code: "idempotency_in_progress", Message: "A request with this Idempotency-Key is still being processed"}
	ErrInvalidIdempotencyKey = &core.Error{Kind: core.KindInvalid, Code: "invalid_idempotency_key", Message: "Idempotency-Key must be 1 to 255 visible ASCII characters"}
)
