package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/core/ehr"
)

const (
	// staleClaim is how long a claimed Idempotency-Key without an outcome
	// blocks a repeat; after it the first request is taken to have died.
	staleClaim = 2 * time.Minute
	// IdempotencyRetention is how long an Idempotency-Key is remembered;
	// after it the key may be used afresh, and PurgeIdempotency removes it.
	IdempotencyRetention = 24 * time.Hour
)

// sqlLockNotAvailable is the SQLSTATE of a lock wait past lock_timeout.
const sqlLockNotAvailable = "55P03"

// WithLock runs fn holding the PostgreSQL advisory lock named key, so one
// agent's calendar check and booking run one at a time across instances.
//
// fn makes EHR round trips that may take seconds, and a session-level
// advisory lock pins its connection for all of them. So the lock is held
// on a connection of the lock pool, a second pool of at most
// pool_max_lock_conns connections that nothing else uses: bookings can
// then never take the main pool's connections that reads need, however many
// there are or however slow the EHR is. (A semaphore in front of the main
// pool would bound the holders just as well, but the main pool's size would
// then have to be kept above the semaphore's by hand; two pools cannot
// drift.) The advisory lock itself, not the pool, is what serialises one
// agent's bookings, across every instance.
//
// The wait is bounded by the store's lock wait (pool_lock_wait), for the
// lock connection and the lock together: no lock connection free in time is
// ehr.ErrBookingBusy (503), the agent's lock still held by another booking
// is ehr.ErrAgentBusy (409). The server waits for the lock itself, in the
// order the waiters came, under lock_timeout set to what is left of the
// wait; no polling.
func (s *Store) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	deadline := time.Now().Add(s.lockWait)
	wait, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	conn, err := s.locks.Acquire(wait)
	if err != nil {
		if ctx.Err() == nil && wait.Err() != nil {
			return ehr.ErrBookingBusy.Wrap(fmt.Errorf("lock %s: no lock connection within %s", key, s.lockWait))
		}
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer conn.Release()
	// lock_timeout 0 would mean no limit: at least 1 ms is left.
	left := max(time.Until(deadline).Milliseconds(), 1)
	if _, err := conn.Exec(ctx, `SELECT set_config('lock_timeout', $1, false)`, strconv.FormatInt(left, 10)); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, key); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == sqlLockNotAvailable {
			return ehr.ErrAgentBusy.Wrap(fmt.Errorf("lock %s: not free within %s", key, s.lockWait))
		}
		// Cancelled or broken mid-way, the lock may have been taken just
		// before: the session must not go back to the pool; closing it
		// ends the session and any lock it holds.
		closeConn(conn)
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); err != nil {
			// A session whose unlock failed must not go back to the pool
			// holding the lock: closing it releases the lock.
			closeConn(conn)
		}
	}()
	return fn(ctx)
}

// closeConn closes a lock connection before its Release, so the pool drops
// it. Close drops the socket even when it reports an error, and the server
// then ends the session and its locks.
func closeConn(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = conn.Conn().Close(ctx)
}

// Idempotency is the store of Idempotency-Keys; it implements
// ehr.IdempotencyStore.
type Idempotency struct {
	db dbtx
}

// Idempotency returns the Idempotency-Key store.
func (s *Store) Idempotency() *Idempotency { return &Idempotency{db: s.pool} }

var _ ehr.IdempotencyStore = (*Idempotency)(nil)

// Claim records the key with the first of fingerprints, or returns what
// the first request stored when its fingerprint is any of them.
func (r *Idempotency) Claim(ctx context.Context, subject, key string, fingerprints []string) ([]byte, bool, error) {
	if len(fingerprints) == 0 {
		return nil, false, errors.New("claim idempotency key: no fingerprint")
	}
	tag, err := r.db.Exec(ctx, `
		INSERT INTO idempotency_keys (subject, key, fingerprint) VALUES ($1, $2, $3)
		ON CONFLICT (subject, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, created_at = now(), outcome = NULL, completed_at = NULL
		WHERE (idempotency_keys.outcome IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => $4))
		   OR idempotency_keys.created_at < now() - make_interval(secs => $5)`,
		subject, key, fingerprints[0], staleClaim.Seconds(), IdempotencyRetention.Seconds())
	if err != nil {
		return nil, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil, false, nil
	}
	var stored string
	var outcome []byte
	err = r.db.QueryRow(ctx, `SELECT fingerprint, outcome FROM idempotency_keys WHERE subject = $1 AND key = $2`,
		subject, key).Scan(&stored, &outcome)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false, ehr.ErrIdempotencyInProgress // released meanwhile; the client may try again
	case err != nil:
		return nil, false, fmt.Errorf("read idempotency key: %w", err)
	case !slices.Contains(fingerprints, stored):
		return nil, false, ehr.ErrIdempotencyKeyReused
	case outcome == nil:
		return nil, false, ehr.ErrIdempotencyInProgress
	}
	return outcome, true, nil
}

// Complete stores the outcome of a claimed key and, when b is not nil,
// records the booking and writes its event, in one transaction.
func (r *Idempotency) Complete(ctx context.Context, subject, key string, outcome []byte, b *ehr.Booking) error {
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET outcome = $3, completed_at = now() WHERE subject = $1 AND key = $2`,
			subject, key, outcome); err != nil {
			return err
		}
		if b == nil {
			return nil
		}
		return recordBooking(ctx, tx, *b)
	})
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// PurgeIdempotency deletes at most batch keys older than
// IdempotencyRetention and returns how many went; several instances may
// run it at once (a row another is deleting is skipped).
func (r *Idempotency) PurgeIdempotency(ctx context.Context, batch int) (int64, error) {
	tag, err := r.db.Exec(ctx, `
		DELETE FROM idempotency_keys WHERE (subject, key) IN (
			SELECT subject, key FROM idempotency_keys WHERE created_at < now() - make_interval(secs => $1)
			LIMIT $2 FOR UPDATE SKIP LOCKED)`,
		IdempotencyRetention.Seconds(), batch)
	if err != nil {
		return 0, fmt.Errorf("purge idempotency keys: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Release forgets a claimed key that has no outcome.
func (r *Idempotency) Release(ctx context.Context, subject, key string) error {
	_, err := r.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE subject = $1 AND key = $2 AND outcome IS NULL`, subject, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// Bookings is the record of who booked which appointment; it implements
// ehr.BookingLog.
type Bookings struct {
	db dbtx
}

// Bookings returns the booking record.
func (s *Store) Bookings() *Bookings { return &Bookings{db: s.pool} }

var _ ehr.BookingLog = (*Bookings)(nil)

// recordBooking stores b and, the first time, writes b.Event (when it has
// one).
func recordBooking(ctx context.Context, db dbtx, b ehr.Booking) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO appointment_bookings (subject, appointment_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			b.Subject, b.AppointmentID)
		if err != nil || tag.RowsAffected() == 0 || b.Event.ID == "" {
			return err
		}
		return emit(ctx, tx, b.Event)
	})
}

// Record stores b and writes its event, in one transaction; recording it
// again changes nothing.
func (r *Bookings) Record(ctx context.Context, b ehr.Booking) error {
	if err := recordBooking(ctx, r.db, b); err != nil {
		return fmt.Errorf("record booking: %w", err)
	}
	return nil
}

// BookedBy returns the ids of the appointments subject booked, oldest first.
func (r *Bookings) BookedBy(ctx context.Context, subject string) ([]string, error) {
	rows, _ := r.db.Query(ctx, `SELECT appointment_id FROM appointment_bookings WHERE subject = $1 ORDER BY created_at, appointment_id`, subject)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read bookings: %w", err)
	}
	return ids, nil
}

// IsBookedBy reports whether subject booked appointment id.
func (r *Bookings) IsBookedBy(ctx context.Context, subject, id string) (bool, error) {
	var ok bool
	err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM appointment_bookings WHERE subject = $1 AND appointment_id = $2)`, subject, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("read bookings: %w", err)
	}
	return ok, nil
}
