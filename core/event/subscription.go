package event

import (
	"time"

	"github.com/carebridge/carebridge/core"
)

// Origin tells who made a subscription, which decides how far its URL is
// trusted.
type Origin string

// The origins of a subscription.
const (
	// ByOperator is a subscription of the admin CLI: the operator is
	// trusted, its receivers may be on loopback or a private network.
	ByOperator Origin = "operator"
	// ByAPI is a subscription a practice made (POST /api/v1/webhooks): its
	// URL passes URLPolicy at creation, and its address is checked again
	// on every connection (unless the operator allows private addresses).
	ByAPI Origin = "api"
)

// Subscription is a webhook receiver and the events it wants.
type Subscription struct {
	ID  string // a UUID
	URL string
	// Types are the event types it receives, or just All.
	Types []string
	// BusinessID, when set, limits it to that business's events.
	BusinessID  string
	Description string
	Origin      Origin
	// Enabled is false once disabled (by its business, or after 24 h of
	// failed deliveries, DisabledReason then saying so): it gets no new
	// deliveries.
	Enabled        bool
	DisabledReason string
	// Secret is the signing secret, sealed; never shown after creation.
	Secret    []byte
	CreatedAt time.Time
	UpdatedAt time.Time
}

// DeliveryRecord is how one delivery stands, for operators and for the
// delivery log of a subscription.
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
	OccurredAt    time.Time // the event's
	CreatedAt     time.Time // the delivery's
	UpdatedAt     time.Time
}

// The failures of subscriptions and their deliveries.
var (
	// ErrSubscriptionNotFound is an unknown subscription id, or one of
	// another business.
	ErrSubscriptionNotFound = &core.Error{Kind: core.KindNotFound, Code: "subscription_not_found", Message: "Webhook subscription not found"}
	ErrDeliveryNotFound     = &core.Error{Kind: core.KindNotFound, Code: "delivery_not_found", Message: "Webhook delivery not found"}
	// ErrInvalidWebhook is a request that fails validation; the message
	// names the field.
	ErrInvalidWebhook = &core.Error{Kind: core.KindInvalid, Code: "invalid_webhook", Message: "Invalid webhook request"}
	// ErrURLNotAllowed is a receiver URL refused as a request forgery risk
	// (plain http, localhost, a private or loopback address).
	ErrURLNotAllowed = &core.Error{Kind: core.KindInvalid, Code: "webhook_url_not_allowed", Message: "Webhook URL not allowed"}
	// ErrDisabled is a retry, replay or test of a disabled subscription.
	ErrDisabled = &core.Error{Kind: core.KindConflict, Code: "webhook_disabled", Message: "The webhook subscription is disabled; enable it first"}
)
