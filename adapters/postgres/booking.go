package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

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
func (r *Idempotency) Claim(ctx context.Context, subject, key string, fingerprints []string) (ehr.Outcome, bool, error) {
	if len(fingerprints) == 0 {
		return ehr.Outcome{}, false, errors.New("claim idempotency key: no fingerprint")
	}
	tag, err := r.db.Exec(ctx, `
		INSERT INTO idempotency_keys (subject, key, fingerprint) VALUES ($1, $2, $3)
		ON CONFLICT (subject, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, created_at = now(), outcome = NULL, completed_at = NULL
		WHERE (idempotency_keys.outcome IS NULL AND idempotency_keys.created_at < now() - make_interval(secs => $4))
		   OR idempotency_keys.created_at < now() - make_interval(secs => $5)`,
		subject, key, fingerprints[0], staleClaim.Seconds(), IdempotencyRetention.Seconds())
	if err != nil {
		return ehr.Outcome{}, false, fmt.Errorf("claim idempotency key: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return ehr.Outcome{}, false, nil
	}
	var stored string
	var outcome []byte
	err = r.db.QueryRow(ctx, `SELECT fingerprint, outcome FROM idempotency_keys WHERE subject = $1 AND key = $2`,
		subject, key).Scan(&stored, &outcome)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ehr.Outcome{}, false, ehr.ErrIdempotencyInProgress // released meanwhile; the client may try again
	case err != nil:
		return ehr.Outcome{}, false, fmt.Errorf("read idempotency key: %w", err)
	case !slices.Contains(fingerprints, stored):
		return ehr.Outcome{}, false, ehr.ErrIdempotencyKeyReused
	case outcome == nil:
		return ehr.Outcome{}, false, ehr.ErrIdempotencyInProgress
	}
	out, err := decodeOutcome(outcome)
	if err != nil {
		return ehr.Outcome{}, false, fmt.Errorf("stored idempotent outcome: %w", err)
	}
	return out, true, nil
}

// Complete stores the outcome of a claimed key.
func (r *Idempotency) Complete(ctx context.Context, subject, key string, outcome ehr.Outcome) error {
	raw, err := encodeOutcome(outcome)
	if err != nil {
		return fmt.Errorf("store idempotent outcome: %w", err)
	}
	_, err = r.db.Exec(ctx, `UPDATE idempotency_keys SET outcome = $3, completed_at = now() WHERE subject = $1 AND key = $2`,
		subject, key, raw)
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

// Record stores b and removes its hold, in one transaction, and reports
// whether b was new: recording it again changes nothing.
func (r *Bookings) Record(ctx context.Context, b ehr.Booking) (bool, error) {
	var recorded bool
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if b.HoldID != "" {
			if _, err := tx.Exec(ctx, `DELETE FROM booking_holds WHERE id = $1`, b.HoldID); err != nil {
				return err
			}
		}
		var start *time.Time
		if !b.Start.IsZero() {
			start = &b.Start
		}
		tag, err := tx.Exec(ctx, `INSERT INTO appointment_bookings (subject, appointment_id, start_at, business_id, ehr_system)
			VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			b.Subject, b.AppointmentID, start, b.Business, b.System)
		recorded = tag.RowsAffected() == 1
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record booking: %w", err)
	}
	return recorded, nil
}

// Changed notes a move or a cancellation of system's appointment id,
// booked acting for business, in its booking records.
func (r *Bookings) Changed(ctx context.Context, system, business, id string, start time.Time, cancelled bool) error {
	_, err := r.db.Exec(ctx, `UPDATE appointment_bookings SET start_at = $2, cancelled = $3
		WHERE ehr_system = $5 AND appointment_id = $1 AND business_id = $4`,
		id, start, cancelled, business, system)
	if err != nil {
		return fmt.Errorf("record change of appointment %s: %w", id, err)
	}
	return nil
}

// BookedBy returns the appointments subject booked acting for business,
// with their EHR system, oldest first.
func (r *Bookings) BookedBy(ctx context.Context, subject, business string) ([]ehr.OwnBooking, error) {
	rows, _ := r.db.Query(ctx, `SELECT ehr_system, appointment_id, cancelled FROM appointment_bookings
		WHERE subject = $1 AND business_id = $2 ORDER BY created_at, ehr_system, appointment_id`,
		subject, business)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ehr.OwnBooking, error) {
		var b ehr.OwnBooking
		err := row.Scan(&b.System, &b.AppointmentID, &b.Cancelled)
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("read bookings: %w", err)
	}
	return out, nil
}

// IsBookedBy returns the EHR system of subject's booking of appointment id
// acting for business, the newest should two systems hold the id.
func (r *Bookings) IsBookedBy(ctx context.Context, subject, business, id string) (string, bool, error) {
	var system string
	err := r.db.QueryRow(ctx, `SELECT ehr_system FROM appointment_bookings WHERE subject = $1 AND business_id = $2 AND appointment_id = $3
		ORDER BY created_at DESC, ehr_system LIMIT 1`,
		subject, business, id).Scan(&system)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("read bookings: %w", err)
	}
	return system, true, nil
}
