package event

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out ports_moq_test.go . Queue Sender Stream Publisher

// State is where a delivery stands.
type State string

// The states of a delivery.
const (
	Pending   State = "pending"
	Delivered State = "delivered"
	Failed    State = "failed"
)

// Delivery is one event on its way to one subscription.
type Delivery struct {
	ID           int64
	Subscription string
	URL          string
	// Secret is the subscription's signing secret as stored (sealed); the
	// Sender opens it.
	Secret []byte
	// PreviousSecret, when set, is the secret a rotation replaced, sealed,
	// within RotationOverlap: the delivery is signed with both.
	PreviousSecret []byte
	// Guarded is a subscription a practice made (ByAPI) whose address is
	// checked on every connection.
	Guarded bool
	EventID string
	Body    []byte
	// Attempt counts this one: 1 for the first.
	Attempt int
	// OccurredAt is when the event was written; retries stop RetryFor
	// after it.
	OccurredAt time.Time
}

// Result is what one attempt came to.
type Result struct {
	Status int    // the receiver's HTTP status; 0 when it gave none
	Err    string // why the attempt failed, "" when it succeeded; never the body
}

// OK reports whether the receiver took the event (a 2xx answer).
func (r Result) OK() bool { return r.Err == "" && r.Status >= 200 && r.Status < 300 }

// Outcome settles a claimed delivery.
type Outcome struct {
	ID      int64
	State   State
	NextAt  time.Time // when State is Pending: the next attempt
	Attempt int
	Result  Result
}

// Queue holds the deliveries of the outbox's events, shared by every
// instance.
type Queue interface {
	// Claim leases due pending deliveries: for each subscription, at most
	// perSub minus what inflight says this instance already has of it. A
	// leased delivery is due again after lease unless settled, so one
	// whose instance died is delivered again.
	Claim(ctx context.Context, inflight map[string]int, perSub int, lease time.Duration) ([]Delivery, error)
	// Settle records the outcomes of claimed deliveries.
	Settle(ctx context.Context, outcomes []Outcome) error
}

// Sender makes one attempt to deliver d.
type Sender interface {
	Send(ctx context.Context, d Delivery) Result
}

// Message is an event on its way to the message stream.
type Message struct {
	Seq  int64
	ID   string
	Type core.EventType
	Body []byte
}

// Stream is the outbox's record of which events reached the message
// stream.
type Stream interface {
	// ClaimUnpublished leases at most n events not yet published, oldest
	// first; a leased one is claimable again after lease unless marked.
	ClaimUnpublished(ctx context.Context, n int, lease time.Duration) ([]Message, error)
	// MarkPublished records that the events reached the stream.
	MarkPublished(ctx context.Context, seqs []int64) error
}

// Publisher puts events on the message stream; it returns once the stream
// acknowledged every one, or fails. The event id is the message id, so a
// message published twice is stored once.
type Publisher interface {
	Publish(ctx context.Context, msgs []Message) error
}
