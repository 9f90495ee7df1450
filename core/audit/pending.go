package audit

import (
	"context"
	"sync/atomic"
)

// Pending is the final event of a request whose change is a row of the
// service's own database (a blob entry, made or removed): the repository
// that writes the row appends the event in the same transaction, so the
// change and its event commit together or not at all, and the request
// records nothing more. The HTTP edge puts it in the request's context
// with the answer the request gives when the change is made.
type Pending struct {
	// Event is the event as it reads when the change commits: the
	// outcome and status of the request's success. The repository sets
	// ResourceID and BusinessID when the change names them (a new blob's
	// id, the business of its location) and At.
	Event     Event
	committed atomic.Bool
}

// Committed reports whether the event was committed with its change.
func (p *Pending) Committed() bool { return p.committed.Load() }

// MarkCommitted records that the transaction holding the event
// committed; only the repository that appended it calls it.
func (p *Pending) MarkCommitted() { p.committed.Store(true) }

type pendingKey struct{}

// WithPending returns ctx carrying p.
func WithPending(ctx context.Context, p *Pending) context.Context {
	return context.WithValue(ctx, pendingKey{}, p)
}

// PendingFrom returns the event ctx carries that is still to be committed
// with a change, or nil.
func PendingFrom(ctx context.Context) *Pending {
	p, _ := ctx.Value(pendingKey{}).(*Pending)
	if p == nil || p.Committed() {
		return nil
	}
	return p
}
