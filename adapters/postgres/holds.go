package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carebridge/carebridge/core/ehr"
)

// Holds keeps the holds of bookings in progress (table booking_holds); it
// implements ehr.Holds. Every call is one short transaction.
type Holds struct {
	db dbtx
}

// Holds returns the store of booking holds.
func (s *Store) Holds() *Holds { return &Holds{db: s.pool} }

var _ ehr.Holds = (*Holds)(nil)

// The SQLSTATEs that decide a hold's race.
const (
	sqlExclusionViolation = "23P01" // an overlapping hold of the agent
)

// Take records h unless an overlapping hold of its agent in its EHR system
// exists, whichever business holds it (the exclusion constraint). With
// h.MaxFuture, the subject's future bookings and holds at h.Business are
// counted under a transaction lock of the subject, so two bookings of one
// subject at once cannot both pass the count. Locks are taken subject
// first, then agent, always in that order.
func (r *Holds) Take(ctx context.Context, h ehr.Hold, lease time.Duration) error {
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if h.MaxFuture > 0 {
			var n int
			if err := tx.QueryRow(ctx, `
				SELECT pg_advisory_xact_lock(hashtextextended('holds:' || $1, 0)),
				       (SELECT count(*) FROM appointment_bookings WHERE subject = $1 AND business_id = $2 AND NOT cancelled AND start_at > now())
				     + (SELECT count(*) FROM booking_holds WHERE subject = $1 AND business_id = $2 AND kind = 'book' AND upper(period) > now())`,
				h.Subject, h.Business).Scan(nil, &n); err != nil {
				return err
			}
			if n >= h.MaxFuture {
				return ehr.ErrAppointmentLimit.WithMessage("This caller already holds %d future appointments, the most allowed", h.MaxFuture)
			}
		}
		// Two inserts that overlap would each wait for the other's
		// uncommitted row to decide the exclusion constraint: a deadlock.
		// The agent's transaction lock orders them (for the milliseconds of
		// this transaction); the constraint still decides.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('hold-agent:' || $1 || ':' || $2, 0))`, calendar(h), h.AgentID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO booking_holds (id, kind, agent_id, period, subject, idem_key, appointment_id, lease_until, business_id, ehr_system)
			VALUES ($1, $2, $3, tstzrange($4, $5), $6, NULLIF($7, ''), NULLIF($8, ''), now() + make_interval(secs => $9), $10, $11)`,
			h.ID, string(h.Kind), h.AgentID, h.Start, h.End, h.Subject, h.IdempotencyKey, h.AppointmentID, lease.Seconds(), h.Business, h.System)
		return err
	})
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == sqlExclusionViolation:
		return ehr.ErrAgentBusy
	case errors.As(err, &pgErr) && pgErr.Code == sqlUniqueViolation:
		return ehr.ErrIdempotencyInProgress
	case err != nil && !errors.Is(err, ehr.ErrAppointmentLimit):
		return fmt.Errorf("take hold: %w", err)
	}
	return err
}

// calendar is whose calendar hold h takes time of: its EHR system's (the
// agent's calendar is the EHR's), or for a hold of no system its
// business's, as the constraints of booking_holds say.
func calendar(h ehr.Hold) string {
	if h.System == "" {
		return "business:" + h.Business
	}
	return "system:" + h.System
}

// Release removes hold id.
func (r *Holds) Release(ctx context.Context, id string) error {
	if _, err := r.db.Exec(ctx, `DELETE FROM booking_holds WHERE id = $1`, id); err != nil {
		return fmt.Errorf("release hold: %w", err)
	}
	return nil
}

// Unknown marks hold id as settled by nobody, due after after.
func (r *Holds) Unknown(ctx context.Context, id string, after time.Duration) error {
	if _, err := r.db.Exec(ctx, `UPDATE booking_holds SET state = 'unknown', lease_until = now() + make_interval(secs => $2) WHERE id = $1`,
		id, after.Seconds()); err != nil {
		return fmt.Errorf("mark hold unknown: %w", err)
	}
	return nil
}

const holdColumns = `id::text, kind, agent_id, lower(period), upper(period), subject, coalesce(idem_key, ''), coalesce(appointment_id, ''), attempts, business_id, ehr_system`

func scanHold(row pgx.CollectableRow) (ehr.Hold, error) {
	var h ehr.Hold
	var kind string
	err := row.Scan(&h.ID, &kind, &h.AgentID, &h.Start, &h.End, &h.Subject, &h.IdempotencyKey, &h.AppointmentID, &h.Attempts, &h.Business, &h.System)
	h.Kind = ehr.HoldKind(kind)
	return h, err
}

// Resume leases the booking hold of subject's key to the caller when
// nobody is calling the EHR for it.
func (r *Holds) Resume(ctx context.Context, subject, key string, lease time.Duration) (ehr.Hold, bool, error) {
	rows, _ := r.db.Query(ctx, `
		UPDATE booking_holds SET state = 'calling', lease_until = now() + make_interval(secs => $3), attempts = attempts + 1
		WHERE subject = $1 AND idem_key = $2 AND kind = 'book' AND (state = 'unknown' OR lease_until < now())
		RETURNING `+holdColumns, subject, key, lease.Seconds())
	holds, err := pgx.CollectRows(rows, scanHold)
	if err != nil {
		return ehr.Hold{}, false, fmt.Errorf("resume hold: %w", err)
	}
	if len(holds) == 0 {
		return ehr.Hold{}, false, nil
	}
	return holds[0], true, nil
}

// Due leases at most n holds past their lease to the caller, oldest first;
// a hold another caller is leasing meanwhile is skipped.
func (r *Holds) Due(ctx context.Context, n int, lease time.Duration) ([]ehr.Hold, error) {
	rows, _ := r.db.Query(ctx, `
		UPDATE booking_holds SET state = 'calling', lease_until = now() + make_interval(secs => $2), attempts = attempts + 1
		WHERE id IN (SELECT id FROM booking_holds WHERE lease_until < now() ORDER BY lease_until LIMIT $1 FOR UPDATE SKIP LOCKED)
		RETURNING `+holdColumns, n, lease.Seconds())
	holds, err := pgx.CollectRows(rows, scanHold)
	if err != nil {
		return nil, fmt.Errorf("claim due holds: %w", err)
	}
	return holds, nil
}
