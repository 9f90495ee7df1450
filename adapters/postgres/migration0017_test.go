package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/adapters/postgres"
)

// Migration 0017 records the EHR system of the bookings sync's states
// know (and of their outcomes), keeps the holds in flight, and removes the
// messages kept with failed outcomes (they may quote an EHR).
func TestIntegrationMigration0017_RecordsWhatItKnowsAndDropsKeptMessages(t *testing.T) {
	ctx := context.Background()
	dbURL := migratedTo(t, 16)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const marker = "Zqmigrationmarker"
	for _, sql := range []string{
		`INSERT INTO appointment_bookings (subject, business_id, appointment_id) VALUES ('pat', 'biz-a', 'apt-1'), ('pat', 'biz-a', 'apt-2')`,
		`INSERT INTO ehr_appointment_states (system, appointment_id, agent_id, status, start_at, end_at, business_id)
			VALUES ('clinic-a', 'apt-1', 'dr-1', 'booked', now(), now() + interval '1 hour', 'biz-a'),
			       ('clinic-b', 'apt-1', 'dr-1', 'booked', now(), now() + interval '1 hour', 'biz-z')`,
		// Two practices' holds of one agent at once: what 0012 allowed.
		`INSERT INTO booking_holds (id, kind, agent_id, period, subject, business_id, lease_until) VALUES
			('00000000-0000-0000-0000-00000000000a', 'book', 'dr-1', tstzrange('2030-01-01 09:00Z', '2030-01-01 09:30Z'), 'pat', 'biz-a', now()),
			('00000000-0000-0000-0000-00000000000b', 'book', 'dr-1', tstzrange('2030-01-01 09:00Z', '2030-01-01 09:30Z'), 'pat', 'biz-b', now())`,
		`INSERT INTO idempotency_keys (subject, key, fingerprint, outcome) VALUES
			('pat', 'k1', 'fp', '{"appointmentId": "apt-1", "status": "booked"}'),
			('pat', 'k2', 'fp', '{"appointmentId": "apt-2", "status": "booked"}'),
			('pat', 'k3', 'fp', '{"error": {"kind": 1, "code": "validation_failed", "message": "peer: patient ` + marker + ` is on a list"}}')`,
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if err := postgres.Migrate(dbURL); err != nil {
		t.Fatal(err)
	}
	var bookings, holds, outcomes string
	if err := conn.QueryRow(ctx, `SELECT string_agg(appointment_id || '=' || ehr_system, ',' ORDER BY appointment_id) FROM appointment_bookings`).Scan(&bookings); err != nil {
		t.Fatal(err)
	}
	if bookings != "apt-1=clinic-a,apt-2=" {
		t.Errorf("bookings %s; want apt-1 in clinic-a (sync knows it for biz-a), apt-2 left to the pin at start", bookings)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*)::text || ':' || string_agg(ehr_system, ',') FROM booking_holds`).Scan(&holds); err != nil || holds != "2:," {
		t.Errorf("holds %q %v; want both kept, of no system yet", holds, err)
	}
	if err := conn.QueryRow(ctx, `SELECT string_agg(key || '=' || outcome::text, ' ' ORDER BY key) FROM idempotency_keys`).Scan(&outcomes); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(outcomes, `k1={"status": "booked", "system": "clinic-a", "appointmentId": "apt-1"}`) ||
		!strings.Contains(outcomes, `k2={"status": "booked", "appointmentId": "apt-2"}`) || strings.Contains(outcomes, marker) || !strings.Contains(outcomes, `"code": "validation_failed"`) {
		t.Errorf("outcomes %s", outcomes)
	}
}
