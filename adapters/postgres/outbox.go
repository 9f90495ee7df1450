package postgres

import (
	"context"
	"fmt"

	"github.com/carebridge/carebridge/core"
)

// EventsChannel is the channel every event's transaction notifies on
// commit, so the dispatchers of every instance look for work at once.
const EventsChannel = "carebridge_events"

// Outbox writes events to the outbox; it implements core.Outbox. The
// cores get one inside their Transactor's transaction, so an event is
// committed with its change; on the pool (Store.Outbox) it writes an event
// on its own, for tests and tools.
type Outbox struct {
	db dbtx
}

// Outbox returns the outbox writer outside any transaction.
func (s *Store) Outbox() *Outbox { return &Outbox{db: s.pool} }

var _ core.Outbox = (*Outbox)(nil)

// Emit writes e to the outbox in the transaction o belongs to, with one
// pending delivery for each enabled webhook subscription that wants it (a
// subscription sees the events written after it exists), and notifies
// EventsChannel on commit. One round trip.
func (o *Outbox) Emit(ctx context.Context, e core.Event) error {
	body, err := eventBody(e)
	if err != nil {
		return err
	}
	var business *string
	if e.BusinessID != "" {
		business = &e.BusinessID
	}
	_, err = o.db.Exec(ctx, `
		WITH e AS (
			INSERT INTO events (id, type, business_id, body, created_at) VALUES ($1, $2, $3, $4, $5)
			RETURNING seq),
		d AS (
			INSERT INTO webhook_deliveries (event_seq, subscription_id)
			SELECT e.seq, s.id FROM e, webhook_subscriptions s
			WHERE s.enabled AND (s.event_types @> ARRAY[$2::text] OR s.event_types @> ARRAY['*'])
			  AND (s.business_id IS NULL OR s.business_id = $3::uuid))
		SELECT pg_notify('`+EventsChannel+`', '')`,
		e.ID, string(e.Type), business, body, e.OccurredAt)
	if err != nil {
		return fmt.Errorf("write event %s: %w", e.Type, err)
	}
	return nil
}
