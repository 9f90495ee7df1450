package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/event"
)

// EventsChannel is the channel every event's transaction notifies on
// commit, so the dispatchers of every instance look for work at once.
const EventsChannel = "carebridge_events"

// emit writes e to the outbox in the transaction db belongs to, with one
// pending delivery for each webhook subscription that wants it (a
// subscription sees the events written after it exists), and notifies
// EventsChannel on commit. One round trip.
func emit(ctx context.Context, db dbtx, e event.Event) error {
	body, err := e.Body()
	if err != nil {
		return err
	}
	var business *string
	if e.BusinessID != "" {
		business = &e.BusinessID
	}
	_, err = db.Exec(ctx, `
		WITH e AS (
			INSERT INTO events (id, type, business_id, body, created_at) VALUES ($1, $2, $3, $4, $5)
			RETURNING seq),
		d AS (
			INSERT INTO webhook_deliveries (event_seq, subscription_id)
			SELECT e.seq, s.id FROM e, webhook_subscriptions s
			WHERE (s.event_types @> ARRAY[$2::text] OR s.event_types @> ARRAY['*'])
			  AND (s.business_id IS NULL OR s.business_id = $3::uuid))
		SELECT pg_notify('`+EventsChannel+`', '')`,
		e.ID, string(e.Type), business, body, e.OccurredAt)
	if err != nil {
		return fmt.Errorf("write event %s: %w", e.Type, err)
	}
	return nil
}

// locationBusiness returns the business of location id ("" when there is
// no such location).
func locationBusiness(ctx context.Context, db dbtx, id int64) (string, error) {
	var b string
	err := db.QueryRow(ctx, `SELECT business_id::text FROM business_locations WHERE id = $1`, id).Scan(&b)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read business of location %d: %w", id, err)
	}
	return b, nil
}

// emitForLocation writes an event of type t about location id, which
// belongs to its business.
func emitForLocation(ctx context.Context, db dbtx, t event.Type, id int64) error {
	b, err := locationBusiness(ctx, db, id)
	if err != nil {
		return err
	}
	return emit(ctx, db, event.Location(t, id, b))
}

// emitBlob writes a blob event; the blob belongs to the business of its
// businessLocationId when that names a location.
func emitBlob(ctx context.Context, db dbtx, t event.Type, id int64, container, location string) error {
	var b string
	if n, err := strconv.ParseInt(location, 10, 64); err == nil && n > 0 {
		if b, err = locationBusiness(ctx, db, n); err != nil {
			return err
		}
	}
	return emit(ctx, db, event.Blob(t, id, container, location, b))
}

// Outbox writes an event on its own, outside any change's transaction
// (the repositories write theirs in their own transactions); tests and
// tools use it to put events in the outbox directly.
type Outbox struct {
	db dbtx
}

// Outbox returns the outbox writer.
func (s *Store) Outbox() *Outbox { return &Outbox{db: s.pool} }

// Emit writes e.
func (o *Outbox) Emit(ctx context.Context, e event.Event) error { return emit(ctx, o.db, e) }
