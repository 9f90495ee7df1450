package postgres

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/core/event"
)

// Webhooks keeps the webhook subscriptions and the outbox's deliveries;
// it implements event.Queue and event.Stream.
type Webhooks struct {
	db dbtx
	// q runs the claims and the settling of deliveries and publications.
	q   dbtx
	own *pgxpool.Pool // q's pool when it has one of its own
	// OnDisabled, when set, is told the subscriptions Settle disabled
	// (a metric).
	OnDisabled func(ids []string)
}

// Webhooks returns the webhook store.
func (s *Store) Webhooks() *Webhooks { return &Webhooks{db: s.pool, q: s.pool} }

// DeliveryQueue returns the webhook store of a dispatcher: its claims and
// settling run on a small pool of their own whose commits do not wait for
// the WAL flush (synchronous_commit off). That is safe for at-least-once
// delivery, and it takes the flush wait off every claim and settle: if the
// server crashes, a lost claim only lets its delivery be sent again, a lost
// settle only sends it again. The events themselves are committed with
// their changes, durably. Close closes the pool.
func (s *Store) DeliveryQueue() (*Webhooks, error) {
	pc := s.pool.Config().Copy()
	pc.MaxConns, pc.MinConns = 2, 0 // the dispatcher, the NATS relay
	pc.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("delivery queue pool: %w", err)
	}
	return &Webhooks{db: s.pool, q: pool, own: pool}, nil
}

// Close closes the pool of a DeliveryQueue.
func (w *Webhooks) Close() {
	if w.own != nil {
		w.own.Close()
	}
}

var (
	_ event.Queue  = (*Webhooks)(nil)
	_ event.Stream = (*Webhooks)(nil)
)

// Add stores sub and sets its CreatedAt.
func (w *Webhooks) Add(ctx context.Context, sub *event.Subscription) error {
	var business *string
	if sub.BusinessID != "" {
		business = &sub.BusinessID
	}
	err := w.db.QueryRow(ctx, `
		INSERT INTO webhook_subscriptions (id, url, event_types, business_id, secret)
		VALUES ($1, $2, $3, $4, $5) RETURNING created_at`,
		sub.ID, sub.URL, sub.Types, business, sub.Secret).Scan(&sub.CreatedAt)
	if err != nil {
		return fmt.Errorf("add webhook subscription: %w", err)
	}
	return nil
}

// All returns every subscription of every business, oldest first,
// without secrets (the operator's list).
func (w *Webhooks) All(ctx context.Context) ([]event.Subscription, error) {
	rows, _ := w.db.Query(ctx, `SELECT `+subColumns+` FROM webhook_subscriptions ORDER BY created_at, id`)
	subs, err := pgx.CollectRows(rows, scanSub)
	if err != nil {
		return nil, fmt.Errorf("list webhook subscriptions: %w", err)
	}
	return subs, nil
}

// Reseal replaces the sealed secret of every subscription (and its
// previous secret, while a rotation keeps one) with what reseal returns
// for it, in one transaction that locks the subscriptions. A subscription
// reseal fails for keeps its secrets; its id is in failed.
func (w *Webhooks) Reseal(ctx context.Context, reseal func(id string, sealed []byte) ([]byte, error)) (resealed int, failed []string, err error) {
	type sub struct {
		id             string
		sealed, before []byte
	}
	err = pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		rows, _ := tx.Query(ctx, `SELECT id::text, secret, previous_secret FROM webhook_subscriptions ORDER BY created_at, id FOR UPDATE`)
		subs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (sub, error) {
			var s sub
			err := row.Scan(&s.id, &s.sealed, &s.before)
			return s, err
		})
		if err != nil {
			return err
		}
		for _, s := range subs {
			sealed, err := reseal(s.id, s.sealed)
			var before []byte
			if err == nil && s.before != nil {
				before, err = reseal(s.id, s.before)
			}
			if err != nil {
				failed = append(failed, s.id)
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE webhook_subscriptions SET secret = $2, previous_secret = $3 WHERE id = $1::uuid`,
				s.id, sealed, before); err != nil {
				return err
			}
			resealed++
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("reseal webhook secrets: %w", err)
	}
	return resealed, failed, nil
}

// Remove deletes subscription id and its deliveries; an unknown one is
// event.ErrSubscriptionNotFound.
func (w *Webhooks) Remove(ctx context.Context, id string) error {
	uid, ok := parseUUID(id)
	if !ok {
		return event.ErrSubscriptionNotFound
	}
	tag, err := w.db.Exec(ctx, `DELETE FROM webhook_subscriptions WHERE id = $1`, uid)
	if err != nil {
		return fmt.Errorf("remove webhook subscription: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return event.ErrSubscriptionNotFound
	}
	return nil
}

// AllDeliveries returns the latest deliveries of every subscription,
// newest first, at most limit; with failedOnly, only the failed ones (the
// operator's log).
func (w *Webhooks) AllDeliveries(ctx context.Context, failedOnly bool, limit int) ([]event.DeliveryRecord, error) {
	rows, _ := w.db.Query(ctx, `SELECT `+deliveryColumns+`
		FROM webhook_deliveries d JOIN events e ON e.seq = d.event_seq
		WHERE NOT $1 OR d.state = 'failed'
		ORDER BY d.id DESC LIMIT $2`, failedOnly, limit)
	recs, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return recs, nil
}

// Claim leases due pending deliveries of enabled subscriptions, per
// subscription at most perSub less what this instance has in flight of
// it. A delivery's next_attempt_at is its lease: claimed, it is due again
// after lease. Rows another instance is claiming are skipped.
//
// Its cost must not grow with the backlog: each subscription's rows come
// off webhook_deliveries_due in its order with a constant LIMIT (perSub;
// the ones over this instance's free slots are dropped after, their row
// locks ending with the statement), so the index scan stops early; the
// claimed ids reach the UPDATE as an array, joined through the primary
// keys. It is planned for its values each time (QueryExecModeExec): a
// generic plan of it went back to reading every due row.
func (w *Webhooks) Claim(ctx context.Context, inflight map[string]int, perSub int, lease time.Duration) ([]event.Delivery, error) {
	subs := make([]string, 0, len(inflight))
	counts := make([]int32, 0, len(inflight))
	for s, n := range inflight {
		subs, counts = append(subs, s), append(counts, int32(n))
	}
	rows, _ := w.q.Query(ctx, `
		WITH busy AS (SELECT * FROM unnest($1::uuid[], $2::int[]) AS b(sub, n)),
		c AS (
			SELECT c.id, row_number() OVER (PARTITION BY s.id ORDER BY c.next_attempt_at) AS rank,
				$3 - coalesce(busy.n, 0) AS free
			FROM webhook_subscriptions s
			LEFT JOIN busy ON busy.sub = s.id
			CROSS JOIN LATERAL (
				SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
				WHERE d.subscription_id = s.id AND d.state = 'pending' AND d.next_attempt_at <= now()
				ORDER BY d.next_attempt_at
				LIMIT $3
				FOR UPDATE SKIP LOCKED) c
			WHERE coalesce(busy.n, 0) < $3 AND s.enabled)
		UPDATE webhook_deliveries d
		SET next_attempt_at = now() + make_interval(secs => $4), attempts = d.attempts + 1, updated_at = now()
		FROM webhook_subscriptions s, events e
		WHERE d.id = ANY(ARRAY(SELECT id FROM c WHERE rank <= free)) AND s.id = d.subscription_id AND e.seq = d.event_seq
		RETURNING d.id, d.subscription_id::text, s.url, s.secret,
			CASE WHEN s.previous_secret_expires_at > now() THEN s.previous_secret END, s.origin = 'api',
			e.id, e.body, d.attempts, greatest(e.created_at, d.requeued_at)`,
		pgx.QueryExecModeExec, subs, counts, perSub, lease.Seconds())
	ds, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (event.Delivery, error) {
		var d event.Delivery
		err := row.Scan(&d.ID, &d.Subscription, &d.URL, &d.Secret, &d.PreviousSecret, &d.Guarded, &d.EventID, &d.Body,
			&d.Attempt, &d.OccurredAt)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim webhook deliveries: %w", err)
	}
	return ds, nil
}

// DisableAfter is how long every attempt to a subscription must have
// failed before it is disabled.
const DisableAfter = 24 * time.Hour

// Settle records the outcomes of claimed deliveries in one statement
// (planned for its values, as Claim). An outcome of an attempt whose lease
// ended and which another instance claimed since is dropped, unless it
// delivered, and so is one of an attempt claimed before a retry or replay
// asked for the delivery again (requeued_at later than the claim's
// updated_at): the delivery stays due. It also keeps each subscription's
// run of failures: the first
// failed attempt after a success starts one (failing_since), a success
// ends it, and a failure when it has lasted DisableAfter disables the
// subscription (its pending deliveries fail; OnDisabled is told). Only
// those transitions write the subscription's row.
func (w *Webhooks) Settle(ctx context.Context, outcomes []event.Outcome) error {
	n := len(outcomes)
	ids, attempts := make([]int64, n), make([]int32, n)
	states, errs := make([]string, n), make([]*string, n)
	next, status := make([]*time.Time, n), make([]*int32, n)
	for i, o := range outcomes {
		ids[i], attempts[i], states[i] = o.ID, int32(o.Attempt), string(o.State)
		if o.State == event.Pending {
			next[i] = &o.NextAt
		}
		if o.Result.Status != 0 {
			s := int32(o.Result.Status)
			status[i] = &s
		}
		if o.Result.Err != "" {
			errs[i] = &o.Result.Err
		}
	}
	rows, _ := w.q.Query(ctx, `
		WITH s AS (
			UPDATE webhook_deliveries d
			SET state = o.state, next_attempt_at = coalesce(o.next_at, d.next_attempt_at),
				last_status = o.status, last_error = o.err, updated_at = now()
			FROM unnest($1::bigint[], $2::int[], $3::text[], $4::timestamptz[], $5::int[], $6::text[])
				AS o(id, attempt, state, next_at, status, err)
			WHERE d.id = o.id AND d.state = 'pending' AND (o.state = 'delivered' OR d.attempts = o.attempt)
			  AND (d.requeued_at IS NULL OR d.requeued_at <= d.updated_at)
			RETURNING d.subscription_id AS sub, o.state = 'delivered' AS ok),
		runs AS (SELECT sub, bool_or(ok) AS ok FROM s GROUP BY sub),
		changed AS (
			UPDATE webhook_subscriptions w
			SET failing_since = CASE WHEN runs.ok THEN NULL ELSE coalesce(w.failing_since, now()) END,
				enabled = runs.ok OR w.failing_since IS NULL OR w.failing_since > now() - make_interval(secs => $7),
				disabled_reason = CASE WHEN runs.ok OR w.failing_since IS NULL OR w.failing_since > now() - make_interval(secs => $7)
					THEN w.disabled_reason ELSE $8 END
			FROM runs
			WHERE w.id = runs.sub AND w.enabled
			  AND (runs.ok = (w.failing_since IS NOT NULL) OR w.failing_since <= now() - make_interval(secs => $7))
			RETURNING w.id::text, w.enabled)
		SELECT id FROM changed WHERE NOT enabled`,
		pgx.QueryExecModeExec, ids, attempts, states, next, status, errs, DisableAfter.Seconds(), event.DisabledFailing)
	disabled, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("settle webhook deliveries: %w", err)
	}
	if len(disabled) > 0 {
		if err := failPending(ctx, w.q, disabled); err != nil {
			return fmt.Errorf("fail the deliveries of disabled subscriptions: %w", err)
		}
		if w.OnDisabled != nil {
			w.OnDisabled(disabled)
		}
	}
	return nil
}

// ClaimUnpublished leases at most n events not yet on the message stream,
// oldest first.
func (w *Webhooks) ClaimUnpublished(ctx context.Context, n int, lease time.Duration) ([]event.Message, error) {
	rows, _ := w.q.Query(ctx, `
		UPDATE events SET publish_after = now() + make_interval(secs => $2)
		WHERE seq IN (
			SELECT seq FROM events WHERE published_at IS NULL AND publish_after <= now()
			ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
		RETURNING seq, id, type, body`, n, lease.Seconds())
	msgs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (event.Message, error) {
		var m event.Message
		err := row.Scan(&m.Seq, &m.ID, &m.Type, &m.Body)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("claim events to publish: %w", err)
	}
	slices.SortFunc(msgs, func(a, b event.Message) int { return int(a.Seq - b.Seq) })
	return msgs, nil
}

// MarkPublished records that the events reached the message stream.
func (w *Webhooks) MarkPublished(ctx context.Context, seqs []int64) error {
	if _, err := w.q.Exec(ctx, `UPDATE events SET published_at = now() WHERE seq = ANY($1)`, seqs); err != nil {
		return fmt.Errorf("mark events published: %w", err)
	}
	return nil
}

// EventRetention is how long events stay in the outbox once no delivery
// of theirs is pending.
const EventRetention = 7 * 24 * time.Hour

// PurgeEvents deletes at most batch events older than EventRetention that
// no delivery waits for, with their deliveries, and returns how many went.
// Several instances may run it at once (rows another is deleting are
// skipped).
func (w *Webhooks) PurgeEvents(ctx context.Context, batch int) (int64, error) {
	tag, err := w.db.Exec(ctx, `
		DELETE FROM events WHERE seq IN (
			SELECT seq FROM events e
			WHERE created_at < now() - make_interval(secs => $1)
			  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = e.seq AND d.state = 'pending')
			ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		EventRetention.Seconds(), batch)
	if err != nil {
		return 0, fmt.Errorf("purge events: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Listen calls fn each time events are committed (on any instance), and
// once after each (re)connection, until ctx is done. It holds a
// connection of its own, outside the pool, and reconnects after a
// failure.
func (s *Store) Listen(ctx context.Context, fn func(), onError func(error)) {
	for ctx.Err() == nil {
		err := s.listen(ctx, fn)
		if ctx.Err() != nil {
			return
		}
		onError(err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (s *Store) listen(ctx context.Context, fn func()) error {
	return s.listenOn(ctx, EventsChannel, fn, func(string) { fn() })
}

// listenOn listens on channel over a connection of its own, outside the
// pool: it calls up once LISTEN holds (whatever was committed before is
// then for the caller to read), and notified with the payload of each
// notification, until ctx is done (nil) or the connection fails (or stops
// answering the ping sent after each quiet listenHeartbeat).
func (s *Store) listenOn(ctx context.Context, channel string, up func(), notified func(payload string)) error {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("listen on %s: %w", channel, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
		return fmt.Errorf("listen on %s: %w", channel, err)
	}
	up()
	for {
		wait, cancel := context.WithTimeout(ctx, listenHeartbeat)
		n, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case err == nil:
			notified(n.Payload)
			continue
		case ctx.Err() != nil:
			return nil
		case wait.Err() == nil:
			return fmt.Errorf("wait for notifications on %s: %w", channel, err)
		}
		// Quiet for a while: a connection that died without a word (a
		// half-open TCP connection) would go on waiting; it must answer.
		ping, cancel := context.WithTimeout(ctx, listenHeartbeat/3)
		err = conn.Ping(ping)
		cancel()
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("listening connection on %s: %w", channel, err)
		}
	}
}

// listenHeartbeat is how long a listening connection may be quiet before it
// is asked to answer.
const listenHeartbeat = 15 * time.Second
