package ehr

import (
	"context"
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The API paths' side of sync. A booking carries Carebridge's reference
// (Appointment.Ref) and is in the booking log, which the poller reads: it
// publishes nothing of it. A move or a cancellation records its intent
// (PendingChange) before the EHR is called and removes it in the
// transaction of its own event (origin api), where it also remembers the
// appointment's new state; the poller, reading the change in the EHR in
// between, publishes nothing of what the intent tells. An appointment of
// no known system (Source "") is not remembered.

// intentLease is how long an intent lasts: longer than the EHR call it
// covers (callBudget), so only an API path that died or failed to commit
// after the EHR's answer leaves one to the poller.
const intentLease = callBudget + time.Minute

// intent is a recorded PendingChange of system ("" none recorded).
type intent struct {
	system, id string
}

// intend records the intent of a change of appointment a (its state before
// the change) to status, start and end, for business, in one short
// transaction.
func (s *Scheduling) intend(ctx context.Context, a Appointment, status AppointmentStatus, start, end time.Time, business string) (intent, error) {
	if a.Source == "" {
		return intent{}, nil
	}
	p := PendingChange{ID: core.NewUUID(), AppointmentID: a.ID, AgentID: a.AgentID, Status: status, Start: start, End: end, Business: business}
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		return r.Sync.Intend(ctx, a.Source, p, intentLease)
	})
	if err != nil {
		return intent{}, fmt.Errorf("record the intent to change appointment %s: %w", a.ID, err)
	}
	return intent{system: a.Source, id: p.ID}, nil
}

// withdraw removes intent in of an EHR call that failed. Best effort: an
// intent left lapses, and the poller publishes the change if the EHR made
// it after all.
func (s *Scheduling) withdraw(ctx context.Context, in intent) {
	if in.id == "" {
		return
	}
	_ = s.tx.WithinTx(context.WithoutCancel(ctx), func(ctx context.Context, r Repos) error {
		return r.Sync.Withdraw(ctx, in.system, in.id)
	})
}

// rememberBooking remembers appointment a, booked through the API for
// business. When sync already knows it (its poller saw it first, found it
// ours and published nothing), only its business is set, which the poller
// could not know yet: a later state seen in the EHR stays.
func rememberBooking(ctx context.Context, r Repos, a Appointment, business string) error {
	if a.Source == "" {
		return nil
	}
	known, err := r.Sync.Known(ctx, a.Source, []string{a.ID})
	if err != nil {
		return err
	}
	k, ok := known[a.ID]
	switch {
	case !ok:
		return r.Sync.Remember(ctx, a.Source, apiState(a, business))
	case k.Business != business:
		k.Business = business
		return r.Sync.Remember(ctx, a.Source, k)
	}
	return nil
}

// rememberChange settles intent in of a move or a cancellation the EHR
// confirmed (a is the appointment after it) and reports whether to
// publish it (origin api):
//
//   - the intent has lapsed: no, the poller took the change over;
//   - it is there: yes. Unless the poller has deferred to it (then it
//     remembered what it read in the EHR, maybe a later state), a's state
//     is remembered;
//   - none is there (none recorded, or kept past its retention): yes,
//     unless sync already knows a's very state, which its poller found in
//     the EHR and published (origin ehr) — one event either way.
func rememberChange(ctx context.Context, r Repos, in intent, a Appointment, business string) (publish bool, err error) {
	if a.Source == "" {
		return true, nil
	}
	var p PendingChange
	var found bool
	if in.id != "" {
		if p, found, err = r.Sync.Settle(ctx, in.system, in.id); err != nil || p.Lapsed {
			return false, err
		}
	}
	known, err := r.Sync.Known(ctx, a.Source, []string{a.ID})
	if err != nil {
		return false, err
	}
	k, ok := known[a.ID]
	same := ok && k.Status == a.Status && k.Start.Equal(a.Start) && k.End.Equal(a.End)
	if same || p.Deferred {
		return found, nil
	}
	return true, r.Sync.Remember(ctx, a.Source, apiState(a, business))
}

// apiState is the state of a as an API path remembers it: no version (the
// poller compares status, start and end, then notes the version).
func apiState(a Appointment, business string) AppointmentState {
	return AppointmentState{ID: a.ID, AgentID: a.AgentID, Status: a.Status, Start: a.Start, End: a.End, Business: business}
}
