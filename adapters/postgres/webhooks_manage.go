package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
)

// The webhooks a practice manages (event.Store): the same table as the
// admin CLI's subscriptions, every query bounded to one business. A change
// commits the request's pending audit event with itself.

var _ event.Store = (*Webhooks)(nil)

const subColumns = `id::text, url, event_types, coalesce(business_id::text, ''), description, origin, enabled,
	coalesce(disabled_reason, ''), created_at, updated_at`

func scanSub(row pgx.CollectableRow) (event.Subscription, error) {
	var s event.Subscription
	err := row.Scan(&s.ID, &s.URL, &s.Types, &s.BusinessID, &s.Description, &s.Origin, &s.Enabled,
		&s.DisabledReason, &s.CreatedAt, &s.UpdatedAt)
	return s, err
}

// ids parses a business and subscription id; false when either is not a
// UUID (then no such subscription exists).
func ids(business, id string) (b, s any, ok bool) {
	bu, ok1 := parseUUID(business)
	su, ok2 := parseUUID(id)
	return bu, su, ok1 && ok2
}

// Create stores sub (a practice's) and sets its times.
func (w *Webhooks) Create(ctx context.Context, sub *event.Subscription) error {
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		err := tx.QueryRow(ctx, `
			INSERT INTO webhook_subscriptions (id, url, event_types, business_id, secret, description, origin, enabled)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, updated_at`,
			sub.ID, sub.URL, sub.Types, sub.BusinessID, sub.Secret, sub.Description, string(sub.Origin), sub.Enabled,
		).Scan(&sub.CreatedAt, &sub.UpdatedAt)
		return sub.ID, sub.BusinessID, err
	})
	if err != nil {
		return fmt.Errorf("create webhook subscription: %w", err)
	}
	return nil
}

// List returns a page of business's subscriptions, newest first, and
// their count (All is the operator's list, of every business).
func (w *Webhooks) List(ctx context.Context, business string, p event.PageRequest) ([]event.Subscription, int, error) {
	bu, ok := parseUUID(business)
	if !ok {
		return nil, 0, nil
	}
	var total int
	if err := w.db.QueryRow(ctx, `SELECT count(*) FROM webhook_subscriptions WHERE business_id = $1`, bu).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count webhook subscriptions: %w", err)
	}
	rows, _ := w.db.Query(ctx, `SELECT `+subColumns+` FROM webhook_subscriptions WHERE business_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, bu, p.Limit, (p.Page-1)*p.Limit)
	subs, err := pgx.CollectRows(rows, scanSub)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook subscriptions: %w", err)
	}
	return subs, total, nil
}

// Get returns business's subscription id.
func (w *Webhooks) Get(ctx context.Context, business, id string) (event.Subscription, error) {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	rows, _ := w.db.Query(ctx, `SELECT `+subColumns+` FROM webhook_subscriptions WHERE business_id = $1 AND id = $2`, bu, su)
	s, err := pgx.CollectExactlyOneRow(rows, scanSub)
	if errors.Is(err, pgx.ErrNoRows) {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	if err != nil {
		return event.Subscription{}, fmt.Errorf("read webhook subscription: %w", err)
	}
	return s, nil
}

// Update changes business's subscription id with fn under a row lock. A
// subscription disabled by it has its pending deliveries failed; one
// enabled again starts a fresh run (failing_since cleared).
func (w *Webhooks) Update(ctx context.Context, business, id string, fn func(*event.Subscription) error) (event.Subscription, error) {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	var s event.Subscription
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		rows, _ := tx.Query(ctx, `SELECT `+subColumns+` FROM webhook_subscriptions WHERE business_id = $1 AND id = $2 FOR UPDATE`, bu, su)
		var err error
		if s, err = pgx.CollectExactlyOneRow(rows, scanSub); err != nil {
			return "", "", err
		}
		was := s.Enabled
		if err := fn(&s); err != nil {
			return "", "", err
		}
		var reason *string
		if !s.Enabled {
			reason = &s.DisabledReason
		}
		err = tx.QueryRow(ctx, `
			UPDATE webhook_subscriptions SET url = $3, event_types = $4, description = $5, origin = $6, enabled = $7,
				disabled_reason = $8, failing_since = CASE WHEN $7 AND NOT enabled THEN NULL ELSE failing_since END,
				updated_at = now()
			WHERE business_id = $1 AND id = $2 RETURNING updated_at`,
			bu, su, s.URL, s.Types, s.Description, string(s.Origin), s.Enabled, reason).Scan(&s.UpdatedAt)
		if err != nil {
			return "", "", err
		}
		if was && !s.Enabled {
			err = failPending(ctx, tx, []string{s.ID})
		}
		return s.ID, business, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return event.Subscription{}, event.ErrSubscriptionNotFound
	}
	if err != nil {
		return event.Subscription{}, fmt.Errorf("update webhook subscription: %w", err)
	}
	return s, nil
}

// failPending ends the pending deliveries of disabled subscriptions: they
// are failed, and a replay brings their events back once enabled again.
func failPending(ctx context.Context, db dbtx, subs []string) error {
	_, err := db.Exec(ctx, `
		UPDATE webhook_deliveries SET state = 'failed', last_error = 'subscription disabled', updated_at = now()
		WHERE subscription_id = ANY($1::uuid[]) AND state = 'pending'`, subs)
	return err
}

// Delete removes business's subscription id and its deliveries.
func (w *Webhooks) Delete(ctx context.Context, business, id string) error {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.ErrSubscriptionNotFound
	}
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		tag, err := tx.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE business_id = $1 AND id = $2`, bu, su)
		if err == nil && tag.RowsAffected() == 0 {
			err = event.ErrSubscriptionNotFound
		}
		return id, business, err
	})
	if err != nil {
		return fmt.Errorf("delete webhook subscription: %w", err)
	}
	return nil
}

// Rotate makes sealed the secret of business's subscription id, the old
// one its previous secret until keep has passed.
func (w *Webhooks) Rotate(ctx context.Context, business, id string, sealed []byte, keep time.Duration) error {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.ErrSubscriptionNotFound
	}
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		tag, err := tx.Exec(ctx, `
			UPDATE webhook_subscriptions SET previous_secret = secret, secret = $3,
				previous_secret_expires_at = now() + make_interval(secs => $4), updated_at = now()
			WHERE business_id = $1 AND id = $2`, bu, su, sealed, keep.Seconds())
		if err == nil && tag.RowsAffected() == 0 {
			err = event.ErrSubscriptionNotFound
		}
		return id, business, err
	})
	if err != nil {
		return fmt.Errorf("rotate webhook secret: %w", err)
	}
	return nil
}

// deliveryColumns are a DeliveryRecord's, of d joined with its event e.
const deliveryColumns = `d.id, d.subscription_id::text, e.id, e.type, d.state, d.attempts,
	coalesce(d.last_status, 0), coalesce(d.last_error, ''), d.next_attempt_at, e.created_at, d.created_at, d.updated_at`

func scanDelivery(row pgx.CollectableRow) (event.DeliveryRecord, error) {
	var r event.DeliveryRecord
	err := row.Scan(&r.ID, &r.Subscription, &r.EventID, &r.Type, &r.State, &r.Attempts,
		&r.LastStatus, &r.LastError, &r.NextAttemptAt, &r.OccurredAt, &r.CreatedAt, &r.UpdatedAt)
	if r.State != event.Pending {
		r.NextAttemptAt = nil
	}
	return r, err
}

// Deliveries returns a page of the delivery log of business's subscription
// id, newest first, in state when set, and its count.
func (w *Webhooks) Deliveries(ctx context.Context, business, id string, state event.State, p event.PageRequest) ([]event.DeliveryRecord, int, error) {
	bu, su, ok := ids(business, id)
	if !ok {
		return nil, 0, event.ErrSubscriptionNotFound
	}
	var exists bool
	var total int
	err := w.db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM webhook_subscriptions WHERE business_id = $1 AND id = $2),
			(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $2 AND ($3 = '' OR state = $3))`,
		bu, su, string(state)).Scan(&exists, &total)
	if err != nil {
		return nil, 0, fmt.Errorf("count webhook deliveries: %w", err)
	}
	if !exists {
		return nil, 0, event.ErrSubscriptionNotFound
	}
	rows, _ := w.db.Query(ctx, `SELECT `+deliveryColumns+`
		FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
		WHERE d.subscription_id = $1 AND ($2 = '' OR d.state = $2)
		ORDER BY d.id DESC LIMIT $3 OFFSET $4`, su, string(state), p.Limit, (p.Page-1)*p.Limit)
	recs, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return recs, total, nil
}

// Retry makes delivery of business's subscription id pending and due now;
// its retries run for a day from now. requeued_at (clock_timestamp, after
// the updated_at of this transaction) tells Settle that an attempt in
// flight was claimed before the request: its outcome is dropped, and the
// delivery is sent again.
func (w *Webhooks) Retry(ctx context.Context, business, id string, delivery int64) error {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.ErrSubscriptionNotFound
	}
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		tag, err := tx.Exec(ctx, `
			UPDATE webhook_deliveries d SET state = 'pending', next_attempt_at = now(), requeued_at = clock_timestamp(), updated_at = now()
			FROM webhook_subscriptions s
			WHERE d.id = $3 AND d.subscription_id = $2 AND s.id = $2 AND s.business_id = $1`, bu, su, delivery)
		if err == nil && tag.RowsAffected() == 0 {
			err = event.ErrDeliveryNotFound
		}
		if err == nil {
			err = notifyEvents(ctx, tx)
		}
		return id, business, err
	})
	if err != nil {
		return fmt.Errorf("retry webhook delivery: %w", err)
	}
	return nil
}

// Replay queues again, oldest first (due a microsecond apart), a delivery
// to business's subscription id of each event of business it selects that
// occurred in [since, until); a delivery already there becomes pending.
func (w *Webhooks) Replay(ctx context.Context, business, id string, since, until time.Time) (int, error) {
	bu, su, ok := ids(business, id)
	if !ok {
		return 0, event.ErrSubscriptionNotFound
	}
	var n int
	err := audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		var types []string
		err := tx.QueryRow(ctx, `SELECT event_types FROM webhook_subscriptions WHERE business_id = $1 AND id = $2`, bu, su).Scan(&types)
		if errors.Is(err, pgx.ErrNoRows) {
			return "", "", event.ErrSubscriptionNotFound
		}
		if err != nil {
			return "", "", err
		}
		err = tx.QueryRow(ctx, `
			WITH e AS (
				SELECT seq, row_number() OVER (ORDER BY created_at, seq) AS n FROM events
				WHERE business_id = $1 AND created_at >= $3 AND created_at < $4 AND type <> $5
				  AND (type = ANY($6) OR '*' = ANY($6))),
			q AS (
				INSERT INTO webhook_deliveries (event_seq, subscription_id, next_attempt_at, requeued_at)
				SELECT seq, $2, now() + (n - 1) * interval '1 microsecond', now() FROM e
				ON CONFLICT (event_seq, subscription_id) DO UPDATE SET state = 'pending',
					next_attempt_at = EXCLUDED.next_attempt_at, requeued_at = clock_timestamp(), updated_at = now()
				RETURNING 1)
			SELECT count(*) FROM q`, bu, su, since, until, string(core.WebhookTest), types).Scan(&n)
		if err == nil {
			err = notifyEvents(ctx, tx)
		}
		return id, business, err
	})
	if err != nil {
		return 0, fmt.Errorf("replay webhook events: %w", err)
	}
	return n, nil
}

// Test writes e to the outbox, marked published (it never goes to the
// message stream), with one delivery: to business's subscription id.
func (w *Webhooks) Test(ctx context.Context, business, id string, e core.Event) error {
	bu, su, ok := ids(business, id)
	if !ok {
		return event.ErrSubscriptionNotFound
	}
	body, err := eventBody(e)
	if err != nil {
		return err
	}
	err = audited(ctx, w.db, func(tx pgx.Tx) (string, string, error) {
		tag, err := tx.Exec(ctx, `
			WITH s AS (SELECT id FROM webhook_subscriptions WHERE business_id = $1 AND id = $2),
			e AS (
				INSERT INTO events (id, type, business_id, body, created_at, published_at)
				SELECT $3, $4, $1, $5, $6, now() FROM s RETURNING seq)
			INSERT INTO webhook_deliveries (event_seq, subscription_id) SELECT e.seq, $2 FROM e`,
			bu, su, e.ID, string(e.Type), body, e.OccurredAt)
		if err == nil && tag.RowsAffected() == 0 {
			err = event.ErrSubscriptionNotFound
		}
		if err == nil {
			err = notifyEvents(ctx, tx)
		}
		return id, business, err
	})
	if err != nil {
		return fmt.Errorf("test webhook: %w", err)
	}
	return nil
}

// notifyEvents wakes the dispatchers (LISTEN on EventsChannel) when tx
// commits: it queued deliveries that are due now.
func notifyEvents(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_notify('`+EventsChannel+`', '')`)
	return err
}
