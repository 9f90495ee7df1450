package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/ehr"
)

// staleClaim is how long a claimed Idempotency-Key without an outcome
// blocks a repeat; after it the first request is taken to have died.
const staleClaim = 2 * time.Minute

// WithLock runs fn holding the PostgreSQL advisory lock named key, so one
// agent's calendar check and booking run one at a time across instances.
func (s *Store) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, 0))`, key); err != nil {
		return fmt.Errorf("lock %s: %w", key, err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtextextended($1, 0))`, key); err != nil {
			// A session whose unlock failed must not go back to the pool
			// holding the lock: closing it releases the lock.
			_ = conn.Conn().Close(ctx)
		}
	}()
	return fn(ctx)
}

// Idempotency is the store of Idempotency-Keys; it implements
// ehr.IdempotencyStore.
type Idempotency struct {
	db dbtx
}

// Idempotency returns the Idempotency-Key store.
func (s *Store) Idempotency() *Idempotency { return &Idempotency{db: s.pool} }

var _ ehr.IdempotencyStore = (*Idempotency)(nil)

// Claim records the key, or returns what the first request stored.
func (r *Idempotency) Claim(ctx context.Context, subject, key, fingerprint string) ([]byte, bool, error) {
	tag, err := r.db.Exec(ctx, `
		INSERT INTO idempotency_keys (subject, key, fingerprint) VALUES ($1, $2, $3)
		ON CONFLICT (subject, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, created_at = now()
		WHERE idempotency_keys.outcome IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => $4)`,
		subject, key, fingerprint, staleClaim.Seconds())
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
	case stored != fingerprint:
		return nil, false, ehr.ErrIdempotencyKeyReused
	case outcome == nil:
		return nil, false, ehr.ErrIdempotencyInProgress
	}
	return outcome, true, nil
}

// Complete stores the outcome of a claimed key.
func (r *Idempotency) Complete(ctx context.Context, subject, key string, outcome []byte) error {
	_, err := r.db.Exec(ctx, `UPDATE idempotency_keys SET outcome = $3, completed_at = now() WHERE subject = $1 AND key = $2`,
		subject, key, outcome)
	if err != nil {
		return fmt.Errorf("complete idempotency key: %w", err)
	}
	return nil
}

// Release forgets a claimed key that has no outcome.
func (r *Idempotency) Release(ctx context.Context, subject, key string) error {
	_, err := r.db.Exec(ctx, `DELETE FROM idempotency_keys WHERE subject = $1 AND key = $2 AND outcome IS NULL`, subject, key)
	if err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}
