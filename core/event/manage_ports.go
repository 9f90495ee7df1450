package event

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out manage_moq_test.go . Store Secrets Roles

// Store keeps the subscriptions a business manages and their delivery
// log (a driven port; adapters/postgres implements it). Every method
// works within one business: another business's subscription is
// ErrSubscriptionNotFound. Each change commits the request's pending
// audit event (audit.Pending) with itself.
type Store interface {
	// Create stores sub and sets its CreatedAt and UpdatedAt.
	Create(ctx context.Context, sub *Subscription) error
	// List returns a page of business's subscriptions, newest first, and
	// their total count.
	List(ctx context.Context, business string, p PageRequest) ([]Subscription, int, error)
	Get(ctx context.Context, business, id string) (Subscription, error)
	// Update changes subscription id with fn under a row lock and stores
	// what fn left.
	Update(ctx context.Context, business, id string, fn func(*Subscription) error) (Subscription, error)
	Delete(ctx context.Context, business, id string) error
	// Rotate makes sealed the secret, and the one it replaces the previous
	// secret, which signs deliveries too until keep has passed; no such
	// subscription of business is ErrSubscriptionNotFound.
	Rotate(ctx context.Context, business, id string, sealed []byte, keep time.Duration) error
	// Deliveries returns a page of the subscription's delivery log, newest
	// first (only the deliveries in state, when set), and its count.
	Deliveries(ctx context.Context, business, id string, state State, p PageRequest) ([]DeliveryRecord, int, error)
	// Retry makes delivery of subscription id pending and due now.
	Retry(ctx context.Context, business, id string, delivery int64) error
	// Replay queues, due now and oldest first, a delivery to subscription
	// id of every event of business it selects that occurred in
	// [since, until) (webhook.test excluded), and returns how many.
	Replay(ctx context.Context, business, id string, since, until time.Time) (int, error)
	// Test writes e to the outbox with one delivery, to subscription id
	// only; it is never published to the message stream.
	Test(ctx context.Context, business, id string, e core.Event) error
}

// Secrets makes signing secrets (a driven port; adapters/webhook
// implements it).
type Secrets interface {
	// New returns a fresh secret of subscription id: its text
	// ("whsec_…", shown once) and the secret sealed for storage.
	New(id string) (text string, sealed []byte)
}

// Roles tells a caller's role in a business (a driven port; app wires
// the business members).
type Roles interface {
	// Role returns subject's role in business; "" when not a member.
	Role(ctx context.Context, business, subject string) (core.Role, error)
}
