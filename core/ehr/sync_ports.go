package ehr

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out sync_moq_test.go . ChangeFeed SyncStore SyncRepo

// The ports of EHR sync (issue 21): hearing the appointment changes made
// in the EHR itself, not through the API.

// AppointmentChange is an appointment as the EHR holds it after a change.
// Appointment.UpdatedAt is the EHR's own time of the change (FHIR
// meta.lastUpdated, a bot's updatedAt), never the local clock; its Ref is
// set when Carebridge booked it (FHIR: our identifier; bot: externalId).
type AppointmentChange struct {
	Appointment Appointment
	// Version tells this state of the appointment from another: the
	// server's meta.versionId, else its last-updated instant (RFC 3339
	// with nanoseconds).
	Version string
}

// ChangeFeed is an integration EHR's feed of appointment changes (a driven
// port; the FHIR scheduler and the WebSocket bot implement it).
type ChangeFeed interface {
	// AppointmentChanges returns the appointments the EHR changed after
	// since (its own clock; the zero time: from its first), oldest first
	// by UpdatedAt, at most max, with More when there are more (the
	// caller asks again from the last one's UpdatedAt), and the EHR's
	// clock when it answered when the EHR tells it. An appointment the
	// EHR returns without a usable time, agent or status is left out (and
	// logged without patient data), so it never blocks the feed. An EHR
	// that cannot tell its changes fails with ErrChangesNotSupported.
	AppointmentChanges(ctx context.Context, since time.Time, max int) (ChangeBatch, error)
}

// ChangeBatch is one answer of a ChangeFeed.
type ChangeBatch struct {
	// Changes are the appointments changed after since, oldest first by
	// UpdatedAt.
	Changes []AppointmentChange
	// More tells that the EHR holds more changes after the last one.
	More bool
	// Clock is the EHR's own time when it answered — FHIR: the HTTP Date
	// of its last answer, which tells the second (the EHR's clock lies in
	// the second after it) — or zero when the EHR does not tell it (a
	// WebSocket bot). The poller's watermark never passes it (see
	// SyncConfig.Skew).
	Clock time.Time
}

// ErrChangesNotSupported is an EHR that cannot tell its appointment
// changes (a bot answering unknown_action to appointments.changes): its
// poller logs it once and stops.
var ErrChangesNotSupported = &core.Error{Kind: core.KindBadGateway, Code: "changes_not_supported", Message: "The EHR cannot tell its appointment changes"}

// AppointmentState is what sync remembers of one appointment of one EHR
// system: the last state it has published or taken as known, which the next
// change is classified against. Ids, statuses and times only.
type AppointmentState struct {
	ID         string // the appointment's id in its EHR system
	AgentID    string
	Version    string // AppointmentChange.Version; "" when the API path remembered it
	Status     AppointmentStatus
	Start, End time.Time
	Business   string // the business its events belong to ("" none)
}

// SyncCursor is where a system's poller stands: the newest change it has
// taken in, by the EHR's own clock (zero: none yet), and whether its first
// sweep through the EHR's history (the baseline) is done.
type SyncCursor struct {
	Watermark time.Time
	Baselined bool
}

// SyncStatus is where a system's poller stands, as the store has it: its
// cursor and its last poll (for /readyz and metrics, and for the instances
// that do not hold the lease).
type SyncStatus struct {
	Watermark  time.Time // the EHR's time of the newest change taken in (zero: none)
	Baselined  bool
	LastPollAt time.Time // zero: never
	LastError  string    // the last poll's failure code ("" none)
}

// SyncState is where the poller of one EHR system stands, as /readyz shows
// it. An EHR that is down shows there and does not make the service
// unready: the service still serves everything else, and its poller
// catches up from the watermark when the EHR returns.
type SyncState struct {
	EHR string
	// Lag is the time since the last successful poll of the system (by
	// any instance, as this one last saw it).
	Lag time.Duration
	// Watermark is the EHR's own time of the newest change taken in,
	// LastPollAt the last poll's end (zero: none).
	Watermark, LastPollAt time.Time
	// LastError is the last poll's failure code ("" none).
	LastError string
}

// SyncStore keeps each system's poll cursor and lease, outside any
// transaction (a driven port; adapters/postgres implements it).
type SyncStore interface {
	// Claim leases system's poller to owner for lease, when nobody else
	// holds it (or the holder's lease ran out; owner's own lease is
	// renewed), and returns the cursor; held is false when another owner
	// holds it. The lease is the database's time, never the EHR's.
	Claim(ctx context.Context, system, owner string, lease time.Duration) (c SyncCursor, held bool, err error)
	// Polled notes a poll of system by owner ended now, with failure the
	// failure's code ("" none): ids and codes only, never an EHR's words.
	Polled(ctx context.Context, system, owner, failure string) error
	// KnownBetween returns the states of system not cancelled whose start
	// is in [from, to), at most max, by start.
	KnownBetween(ctx context.Context, system string, from, to time.Time, max int) ([]AppointmentState, error)
	// Status returns system's SyncStatus, of whichever instance polls it;
	// found is false before its first claim.
	Status(ctx context.Context, system string) (st SyncStatus, found bool, err error)
}

// SyncRepo is sync's repository inside a Transactor's transaction
// (Repos.Sync): the poller's batch and the API paths' changes write their
// states with their events, so an event is committed with the state it
// tells of.
type SyncRepo interface {
	// Hold checks, first in a transaction, that owner still holds system's
	// lease, renews it for lease and keeps it until the transaction ends
	// (a lock); a lease that has moved is ErrSyncLeaseLost.
	Hold(ctx context.Context, system, owner string, lease time.Duration) error
	// Known returns the states of system of those of ids it has, by id,
	// locked until the transaction ends.
	Known(ctx context.Context, system string, ids []string) (map[string]AppointmentState, error)
	// Booked returns, for those of system's appointment ids the booking
	// log holds (booked through the service in that system), the
	// businesses it records them under: an id is only unique within one
	// EHR system.
	Booked(ctx context.Context, system string, ids []string) (map[string][]string, error)
	// Remember stores s as system's state of appointment s.ID.
	Remember(ctx context.Context, system string, s AppointmentState) error
	// Advance moves system's cursor forward to c: the watermark never goes
	// back (a zero one is unchanged), and a done baseline stays done.
	Advance(ctx context.Context, system string, c SyncCursor) error
	// Rewind sets system's watermark back to to when it lies after it: a
	// watermark that an EHR time past the EHR's own clock moved there
	// (before the poller bounded it), which no later change would pass.
	Rewind(ctx context.Context, system string, to time.Time) error

	// Intend records p, a change an API path is about to ask system for,
	// until lease from now (the database's clock).
	Intend(ctx context.Context, system string, p PendingChange, lease time.Duration) error
	// Pending returns system's intents for the appointments among ids
	// that are neither expired, deferred nor lapsed, by appointment id,
	// locked until the transaction ends.
	Pending(ctx context.Context, system string, ids []string) (map[string][]PendingChange, error)
	// Defer marks system's intent id as seen by the poller in the EHR and
	// left to its API path.
	Defer(ctx context.Context, system, id string) error
	// Settle removes system's intent id for its API path, which has the
	// EHR's answer, and returns it as it was; found is false when there is
	// none (none recorded, or a lapsed one kept past its retention).
	Settle(ctx context.Context, system, id string) (p PendingChange, found bool, err error)
	// Withdraw removes system's intent id, of an API call that failed,
	// unless the poller has deferred to it (then it lapses).
	Withdraw(ctx context.Context, system, id string) error
	// Lapse marks at most max of system's expired intents lapsed (taken
	// over by the poller) and returns them, oldest first; it removes the
	// lapsed ones that expired before keep ago, whose API path is long
	// gone.
	Lapse(ctx context.Context, system string, keep time.Duration, max int) ([]PendingChange, error)
}

// PendingChange is the intent of an API path about to move or cancel an
// appointment in its EHR, recorded (SyncRepo.Intend) in a short
// transaction of its own before the EHR is called, and removed by the API
// path once the EHR has answered, in the transaction of its event
// (Settle), or failed (Withdraw). It decides who publishes the change:
//
//   - until it expires, the poller, reading a change that matches it (a
//     cancellation, or the new times of a move), defers to it: it
//     publishes nothing of what the intent tells, and the API path
//     publishes the change with origin api when it settles the intent;
//   - once it has expired (longer than the EHR call; an API path that died
//     or could not commit after the EHR's answer) the poller takes it over
//     (lapsed): a deferred one it publishes itself, with origin ehr (the
//     API path never told it), and any other change it reads from then on
//     it publishes as the EHR's. An API path settling a lapsed intent
//     publishes nothing.
//
// The database's row lock on the intent orders the poller's transaction and
// the API path's: exactly one event per change either way.
type PendingChange struct {
	ID            string // the intent's own id
	AppointmentID string
	AgentID       string
	// Status, Start and End are the appointment's state the change asks
	// for: cancelled (a cancellation), or new times (a move).
	Status     AppointmentStatus
	Start, End time.Time
	Business   string // the business its event belongs to ("" none)
	// Deferred tells an intent whose change the poller has seen in the
	// EHR and left to the API path; Lapsed one it has taken over.
	Deferred, Lapsed bool
}

// ErrSyncLeaseLost is a poller whose lease another instance has taken
// meanwhile: its transaction writes nothing.
var ErrSyncLeaseLost = &core.Error{Kind: core.KindConflict, Code: "sync_lease_lost", Message: "Another instance polls this EHR now"}
