package event

import (
	"time"

	"github.com/carebridge/carebridge/core"
)

// Subscription is a webhook receiver and the events it wants.
type Subscription struct {
	ID  string // a UUID
	URL string
	// Types are the event types it receives, or just All.
	Types []string
	// BusinessID, when set, limits it to that business's events.
	BusinessID string
	// Secret is the signing secret, sealed; never shown after creation.
	Secret    []byte
	CreatedAt time.Time
}

// DeliveryRecord is how one delivery stands, for operators.
type DeliveryRecord struct {
	ID           int64
	Subscription string
	EventID      string
	Type         core.EventType
	State        State
	Attempts     int
	LastStatus   int    // 0: no answer yet
	LastError    string // "": none
	// NextAttemptAt is when a pending delivery is tried next (or, while
	// an attempt is in flight, when its lease ends); nil once settled.
	NextAttemptAt *time.Time
	OccurredAt    time.Time
	UpdatedAt     time.Time
}

// ErrSubscriptionNotFound is an unknown subscription id.
var ErrSubscriptionNotFound = &core.Error{Kind: core.KindNotFound, Code: "subscription_not_found", Message: "Webhook subscription not found"}
