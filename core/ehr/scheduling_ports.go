package ehr

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out scheduling_moq_test.go . Holds IdempotencyStore BookingLog Counter Transactor

// Hold is a booking or a move under way in the EHR: the agent's time it
// claims, and for a booking its record before the EHR is called.
type Hold struct {
	// ID is the service's reference of the booking, which the adapter
	// puts on the EHR appointment (Appointment.Ref).
	ID      string
	Kind    HoldKind
	AgentID string
	Start   time.Time
	End     time.Time
	// Subject is who books; IdempotencyKey is the booking's key ("" none).
	Subject        string
	IdempotencyKey string
	// Business is the acting business of the call ("" none).
	Business string
	// System is the EHR system called: the integration EHR of Business
	// when the hold was taken, or the system of the appointment a move
	// moves. The agent's calendar is that system's, whichever business
	// books it: holds of one agent of one system never overlap. "" is a
	// hold taken before holds recorded their system (its business's
	// integration EHR in force).
	System string
	// AppointmentID is the appointment a move moves.
	AppointmentID string
	// MaxFuture, when above zero, is how many future appointments (booked
	// and held) Subject may have at Business once this hold is taken.
	MaxFuture int
	// Attempts counts the reconciler's tries so far.
	Attempts int
}

// HoldKind tells a booking's hold from a move's.
type HoldKind string

// The kinds of hold.
const (
	HoldBook HoldKind = "book"
	HoldMove HoldKind = "move"
)

// Holds keeps the holds of bookings in progress, across every instance.
// Each call is one short transaction: nothing is held while the EHR
// answers. Two holds of one agent of one EHR system never overlap,
// whichever businesses take them (a database constraint).
type Holds interface {
	// Take records h, leased to the caller for lease. An overlapping hold
	// of the agent in h.System is ErrAgentBusy; a subject over h.MaxFuture is
	// ErrAppointmentLimit.
	Take(ctx context.Context, h Hold, lease time.Duration) error
	// Release removes hold id.
	Release(ctx context.Context, id string) error
	// Unknown marks hold id as settled by nobody yet: its EHR call ended
	// without an answer, so it may have booked. It becomes due after
	// after.
	Unknown(ctx context.Context, id string, after time.Duration) error
	// Resume leases to the caller the booking hold of subject's
	// Idempotency-Key when nobody is calling the EHR for it (its outcome is
	// unknown, or its lease ran out); found is false otherwise.
	Resume(ctx context.Context, subject, key string, lease time.Duration) (h Hold, found bool, err error)
	// Due leases to the caller at most n holds whose outcome is unknown or
	// whose lease ran out (their instance died), oldest first; several
	// instances may call it at once and never get the same hold.
	Due(ctx context.Context, n int, lease time.Duration) ([]Hold, error)
}

// Booking records who booked an appointment through the service: a
// patient-context caller sees and changes only the appointments booked with
// its subject.
type Booking struct {
	Subject  string
	Business string // the acting business of the booking ("" none)
	// System is the EHR system that holds the appointment, where it is
	// read, changed and reconciled from then on.
	System        string
	AppointmentID string
	Start         time.Time
	// HoldID is the hold the booking settles; it is removed with the
	// record.
	HoldID string
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
	Claim(ctx context.Context, subject, key string, fingerprints []string) (outcome Outcome, done bool, err error)
	// Complete stores the outcome of a claimed key.
	Complete(ctx context.Context, subject, key string, outcome Outcome) error
	// Release forgets a claimed key, so the request may be sent again.
	Release(ctx context.Context, subject, key string) error
}

// OwnBooking is one of a subject's bookings: the EHR system that holds
// it ("" recorded before bookings recorded their system), the
// appointment's id there, and whether it was cancelled through the
// service.
type OwnBooking struct {
	System        string
	AppointmentID string
	Cancelled     bool
}

// BookingLog keeps who booked which appointment in which EHR system,
// across every instance.
type BookingLog interface {
	// Record stores b and removes its hold, in one transaction, and
	// reports whether b is new: recording it again changes nothing.
	Record(ctx context.Context, b Booking) (recorded bool, err error)
	// Changed notes that system moved or cancelled its appointment id
	// booked acting for business (start, cancelled).
	Changed(ctx context.Context, system, business, id string, start time.Time, cancelled bool) error
	// BookedBy returns the appointments subject booked acting for
	// business, oldest first.
	BookedBy(ctx context.Context, subject, business string) ([]OwnBooking, error)
	// IsBookedBy returns the EHR system of subject's booking of
	// appointment id acting for business (the newest, should two systems
	// hold the id); found is false when it booked none.
	IsBookedBy(ctx context.Context, subject, business, id string) (system string, found bool, err error)
}

// Transactor runs a change and its events as one transaction: fn's
// writes through r, events included, commit together or not at all.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
}

// Repos are the repositories of one transaction.
type Repos struct {
	Idempotency IdempotencyStore
	Bookings    BookingLog
	Outbox      core.Outbox
	// Sync remembers the appointment states sync classifies changes
	// against and the API paths' intents (PendingChange): a move or a
	// cancellation records its intent before the EHR is called and
	// settles it with its event and state, so the poller publishes no
	// second event.
	Sync SyncRepo
}

// Counter counts calls in fixed windows, for rate limits (the search
// Cache's counters).
type Counter interface {
	Incr(ctx context.Context, key string, ttl time.Duration) (int64, time.Duration, error)
}

// ErrAgentBusy is a booking or move of an agent at a time that overlaps
// one still under way: a conflict of the moment, worth a retry, and never
// kept as an Idempotency-Key's outcome.
var ErrAgentBusy = &core.Error{Kind: core.KindConflict, Code: "agent_busy", Message: "Another booking of this agent at an overlapping time is in progress; try again"}

// ErrAppointmentLimit is a patient-context booking beyond MaxFutureAppointments.
var ErrAppointmentLimit = &core.Error{Kind: core.KindConflict, Code: "too_many_appointments",
	Message: "This caller already holds the most future appointments allowed"}

// The failures of Idempotency-Key handling.
var (
	ErrIdempotencyKeyReused  = &core.Error{Kind: core.KindConflict, Code: "idempotency_key_reused", Message: "This Idempotency-Key was used for a different request"}
	ErrIdempotencyInProgress = &core.Error{Kind: core.KindConflict, Code: "idempotency_in_progress", Message: "A request with this Idempotency-Key is still being processed"}
	ErrInvalidIdempotencyKey = &core.Error{Kind: core.KindInvalid, Code: "invalid_idempotency_key", Message: "Idempotency-Key must be 1 to 255 visible ASCII characters"}
)
