package ehr

import "context"

// The API paths' side of sync: a change made through the API remembers the
// appointment's new state in the transaction of its own event (origin
// api), so the poller, finding the same status, start and end in the EHR,
// publishes no second event. An appointment of no known system (Source "")
// is not remembered.

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

// rememberChange remembers a's state after a move or a cancellation
// through the API for business, and reports whether to publish the change:
// not when sync already knows that very state, which its poller found in
// the EHR before this transaction and published (origin ehr) — one event
// either way.
func rememberChange(ctx context.Context, r Repos, a Appointment, business string) (publish bool, err error) {
	if a.Source == "" {
		return true, nil
	}
	known, err := r.Sync.Known(ctx, a.Source, []string{a.ID})
	if err != nil {
		return false, err
	}
	if k, ok := known[a.ID]; ok && k.Status == a.Status && k.Start.Equal(a.Start) && k.End.Equal(a.End) {
		return false, nil
	}
	return true, r.Sync.Remember(ctx, a.Source, apiState(a, business))
}

// apiState is the state of a as an API path remembers it: no version (the
// poller compares status, start and end, then notes the version).
func apiState(a Appointment, business string) AppointmentState {
	return AppointmentState{ID: a.ID, AgentID: a.AgentID, Status: a.Status, Start: a.Start, End: a.End, Business: business}
}
