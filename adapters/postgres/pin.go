package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// PinEHRSystems records the EHR system of the bookings, holds and
// Idempotency-Key outcomes written before they recorded one (an empty
// system since migration 0017): integration names the integration EHR of a
// business (ok false: it has none, and its rows stay as they are). The
// service calls it at start and before each reload of the EHR systems
// file, with the file in force, which is the one those rows were made
// with; it returns how many rows it pinned. A row whose pin would clash
// with one already recorded (the same booking twice, an overlapping hold
// of the system) stays as it is. Several instances may run it at once.
func (s *Store) PinEHRSystems(ctx context.Context, integration func(business string) (system string, ok bool)) (int64, error) {
	rows, _ := s.pool.Query(ctx, `SELECT business_id FROM appointment_bookings WHERE ehr_system = ''
		UNION SELECT business_id FROM booking_holds WHERE ehr_system = ''`)
	businesses, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("pin EHR systems: %w", err)
	}
	var pinned int64
	for _, b := range businesses {
		system, ok := integration(b)
		if !ok || system == "" {
			continue
		}
		n, err := s.pinBusiness(ctx, b, system)
		pinned += n
		if err != nil {
			return pinned, fmt.Errorf("pin EHR systems of business %q: %w", b, err)
		}
	}
	if pinned == 0 {
		return 0, nil
	}
	_, err = s.pool.Exec(ctx, `
		UPDATE idempotency_keys k SET outcome = k.outcome || jsonb_build_object('system', b.ehr_system)
		FROM (SELECT subject, appointment_id, min(ehr_system) AS ehr_system FROM appointment_bookings
		      WHERE ehr_system <> '' GROUP BY subject, appointment_id HAVING count(*) = 1) b
		WHERE k.outcome ? 'appointmentId' AND NOT k.outcome ? 'system'
		  AND b.subject = k.subject AND b.appointment_id = k.outcome->>'appointmentId'`)
	if err != nil {
		return pinned, fmt.Errorf("pin EHR systems of outcomes: %w", err)
	}
	return pinned, nil
}

// pinBusiness pins business's bookings and holds to system.
func (s *Store) pinBusiness(ctx context.Context, business, system string) (int64, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE appointment_bookings x SET ehr_system = $1 WHERE ehr_system = '' AND business_id = $2
		AND NOT EXISTS (SELECT 1 FROM appointment_bookings y WHERE y.subject = x.subject AND y.business_id = x.business_id
		                AND y.ehr_system = $1 AND y.appointment_id = x.appointment_id)`, system, business)
	if err != nil {
		return 0, err
	}
	pinned := tag.RowsAffected()
	rows, _ := s.pool.Query(ctx, `SELECT id::text FROM booking_holds WHERE ehr_system = '' AND business_id = $1`, business)
	holds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return pinned, err
	}
	for _, id := range holds { // one at a time: in flight only, few
		tag, err := s.pool.Exec(ctx, `UPDATE booking_holds SET ehr_system = $1 WHERE id = $2 AND ehr_system = ''`, system, id)
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == sqlExclusionViolation:
			continue
		case err != nil:
			return pinned, err
		}
		pinned += tag.RowsAffected()
	}
	return pinned, nil
}
