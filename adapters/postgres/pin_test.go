package postgres_test

import (
	"context"
	"testing"

	"github.com/carebridge/carebridge/test/pgtest"
)

// Rows written before bookings, holds and outcomes recorded their EHR
// system are pinned to the integration EHR of their business in the file
// in force; those of a business without one, and those whose pin would
// clash with a row already recorded, stay as they are.
func TestIntegrationPinEHRSystems_PinsOlderRowsToTheirBusinesssIntegrationEHR(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := db.Pool().Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	exec(`INSERT INTO appointment_bookings (subject, business_id, ehr_system, appointment_id) VALUES
		('pat', 'biz-a', '', 'apt-1'), ('pat', 'biz-b', '', 'apt-2'), ('pat', '', '', 'apt-3'), ('pat', 'biz-c', '', 'apt-4'),
		('pat', 'biz-a', 'one', 'apt-5'), ('pat', 'biz-a', '', 'apt-5')`)
	exec(`INSERT INTO booking_holds (id, kind, agent_id, period, subject, business_id, ehr_system, lease_until) VALUES
		('00000000-0000-0000-0000-00000000000a', 'book', 'dr-1', tstzrange('2030-01-01 09:00Z', '2030-01-01 09:30Z'), 'pat', 'biz-a', '', now()),
		('00000000-0000-0000-0000-00000000000b', 'book', 'dr-1', tstzrange('2030-01-01 09:15Z', '2030-01-01 09:45Z'), 'pat', 'biz-x', 'one', now()),
		('00000000-0000-0000-0000-00000000000c', 'book', 'dr-1', tstzrange('2030-01-01 10:00Z', '2030-01-01 10:30Z'), 'pat', 'biz-b', '', now())`)
	exec(`INSERT INTO idempotency_keys (subject, key, fingerprint, outcome) VALUES
		('pat', 'k1', 'fp', '{"appointmentId": "apt-1", "status": "booked"}'), ('pat', 'k2', 'fp', '{"error": {"kind": 5, "code": "agent_unavailable"}}')`)

	integration := map[string]string{"biz-a": "one", "biz-b": "two", "": "one"}
	n, err := db.PinEHRSystems(ctx, func(b string) (string, bool) { s, ok := integration[b]; return s, ok })
	if err != nil || n != 4 {
		t.Fatalf("pinned %d, %v; want 3 bookings and 1 hold", n, err)
	}
	systems := func(sql string) map[string]string {
		t.Helper()
		rows, err := db.Pool().Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]string{}
		for rows.Next() {
			var k, v string
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[k] += v + ";"
		}
		return out
	}
	if got := systems(`SELECT appointment_id, ehr_system FROM appointment_bookings ORDER BY ehr_system`); got["apt-1"] != "one;" ||
		got["apt-2"] != "two;" || got["apt-3"] != "one;" || got["apt-4"] != ";" || got["apt-5"] != ";one;" {
		t.Errorf("bookings %v", got)
	}
	if got := systems(`SELECT right(id::text, 1), ehr_system FROM booking_holds`); got["a"] != ";" || got["b"] != "one;" || got["c"] != "two;" {
		t.Errorf("holds %v; want the overlapping one left, the other pinned", got)
	}
	if got := systems(`SELECT key, coalesce(outcome->>'system', '') FROM idempotency_keys`); got["k1"] != "one;" || got["k2"] != ";" {
		t.Errorf("outcomes %v", got)
	}
	if n, err := db.PinEHRSystems(ctx, func(b string) (string, bool) { s, ok := integration[b]; return s, ok }); err != nil || n != 0 {
		t.Fatalf("pinned again: %d %v", n, err)
	}
}
