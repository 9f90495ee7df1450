package postgres_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/pgtest"
)

var auditT0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

// auditBusiness is a business id for the events that have one.
const auditBusiness = "6f1c2a9e-0d4b-4e8a-9c3f-5b7d1e2a4c60"

// auditEvent is the i-th sample event; its fields vary with i.
func auditEvent(i int) audit.Event {
	actions := []audit.Action{audit.PatientSearch, audit.BlobDownload, audit.AppointmentCreate}
	return audit.Event{
		At:           auditT0.Add(time.Duration(i) * time.Minute),
		RequestID:    fmt.Sprintf("req-%d", i),
		Actor:        []string{"alice", "bob"}[i%2],
		Action:       actions[i%3],
		ResourceType: "patient",
		ResourceID:   fmt.Sprint(100 + i),
		Outcome:      audit.Success,
		Status:       200,
		BusinessID:   map[bool]string{true: auditBusiness}[i%4 == 3],
		Detail:       map[string]any{"results": i, "sources": []string{"epic"}, "cacheHit": i%2 == 0},
	}
}

// recordAudit records auditEvent(0..n-1) one after the other.
func recordAudit(t *testing.T, l *postgres.AuditLog, n int) {
	t.Helper()
	for i := range n {
		if err := l.Record(context.Background(), auditEvent(i)); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
}

func newAuditLog(t testing.TB, db *postgres.Store, cfg postgres.AuditConfig) *postgres.AuditLog {
	l, err := db.AuditLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go l.Run()
	t.Cleanup(l.Close)
	return l
}

func verifyAudit(t *testing.T, db *postgres.Store) (int, int64, bool) {
	t.Helper()
	n, bad, ok, err := db.AuditTrail().Verify(context.Background())
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return n, bad, ok
}

// tamper runs sql as the superuser with triggers off, as an intruder with
// full access to the server would.
func tamper(t *testing.T, db *postgres.Store, sql string) {
	t.Helper()
	err := pgx.BeginFunc(context.Background(), db.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		tag, err := tx.Exec(context.Background(), sql)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("%d rows affected", tag.RowsAffected())
		}
		return err
	})
	if err != nil {
		t.Fatalf("tamper %q: %v", sql, err)
	}
}

func TestIntegrationAuditLog_StoresEveryFieldAndChainsIt(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	ctx := context.Background()
	at := time.Date(2025, 3, 1, 10, 30, 0, 123456789, time.FixedZone("CET", 3600))
	in := []audit.Event{
		{At: at, RequestID: "r-1", Actor: "alice", Action: audit.PatientSearch, ResourceType: "patient",
			Outcome: audit.Success, Status: 200,
			Detail: map[string]any{"results": 3, "sources": []string{"epic", "wsbot"}, "cacheHit": false}},
		// Failed authentication: no actor, no detail.
		{At: at.Add(time.Second), RequestID: "r-2", Action: audit.BlobDownload, ResourceType: "blob",
			ResourceID: "42", Outcome: audit.Denied, Status: 401},
		// What a text column refuses is replaced, not lost with the batch.
		{At: at.Add(2 * time.Second), RequestID: "r-\x00-\xff", Actor: "bob", Action: audit.BlobDelete,
			ResourceType: "blob", ResourceID: "43", Outcome: audit.Failed, Status: 500, Detail: map[string]any{}},
		// A business, given in upper case: kept in the column's lower case.
		{At: at.Add(3 * time.Second), RequestID: "r-4", Actor: "carol", Action: audit.BlobMetadata,
			ResourceType: "blob", ResourceID: "44", BusinessID: strings.ToUpper(auditBusiness),
			Outcome: audit.Success, Status: 200},
	}
	for _, e := range in {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.AuditTrail().List(ctx, postgres.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("%d events, want %d", len(got), len(in))
	}
	prev := postgres.AuditGenesis()
	for i, g := range got {
		want := in[i]
		want.ID = int64(i + 1)
		want.At = want.At.UTC().Truncate(time.Microsecond)
		if i == 2 {
			want.RequestID = "r-\uFFFD-\uFFFD"
		}
		if i == 3 {
			want.BusinessID = auditBusiness
		}
		if g.ID != want.ID || !g.At.Equal(want.At) || g.At.Location() != time.UTC || g.RequestID != want.RequestID ||
			g.Actor != want.Actor || g.Action != want.Action || g.ResourceType != want.ResourceType ||
			g.ResourceID != want.ResourceID || g.BusinessID != want.BusinessID || g.Outcome != want.Outcome ||
			g.Status != want.Status {
			t.Errorf("event %d:\n got %+v\nwant %+v", i+1, g, want)
		}
		if !bytes.Equal(postgres.AuditCanonical(g), postgres.AuditCanonical(want)) {
			t.Errorf("event %d canonical:\n got %s\nwant %s", i+1, postgres.AuditCanonical(g), postgres.AuditCanonical(want))
		}
		if wantHash := postgres.AuditLink(prev, want); !bytes.Equal(g.Hash, wantHash) {
			t.Errorf("event %d: hash %x, want %x", i+1, g.Hash, wantHash)
		}
		prev = g.Hash
	}
	if d := got[0].Detail; d["results"] != 3.0 || d["cacheHit"] != false || fmt.Sprint(d["sources"]) != "[epic wsbot]" {
		t.Errorf("detail %v", d)
	}
	if n := count(t, db, `SELECT count(*) FROM audit_events WHERE business_id IS NULL`); n != 3 {
		t.Errorf("%d events without a business stored with NULL, want 3", n)
	}
	if n, bad, ok := verifyAudit(t, db); !ok || n != 4 || bad != 0 {
		t.Fatalf("verify: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
	if s := l.Stats(); s.Events != 4 || s.Failed != 0 || s.Batches == 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestIntegrationAuditLog_RefusesEventsItCannotStore(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	ok := auditEvent(0)
	for name, change := range map[string]func(*audit.Event){
		"unknown outcome":     func(e *audit.Event) { e.Outcome = "maybe" },
		"status too large":    func(e *audit.Event) { e.Status = 40000 },
		"detail with a NUL":   func(e *audit.Event) { e.Detail = map[string]any{"x": "\x00"} },
		"business not a UUID": func(e *audit.Event) { e.BusinessID = "business-1" },
		"business UUID without dashes": func(e *audit.Event) {
			e.BusinessID = strings.ReplaceAll(auditBusiness, "-", "")
		},
		"business UUID in braces": func(e *audit.Event) { e.BusinessID = "{" + auditBusiness + "}" },
	} {
		e := ok
		change(&e)
		if err := l.Record(context.Background(), e); err == nil {
			t.Errorf("%s: recorded", name)
		}
	}
	// A refused event is refused alone: the next one is written.
	if err := l.Record(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	if n, _, valid := verifyAudit(t, db); !valid || n != 1 {
		t.Fatalf("events=%d ok=%v", n, valid)
	}
}

// Two instances (two pools) with four callers each share one chain.
func TestIntegrationAuditLog_ConcurrentWritersOnTwoInstancesKeepOneChain(t *testing.T) {
	url := pgtest.New(t)
	var logs [2]*postgres.AuditLog
	for i := range logs {
		db, err := postgres.New(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		logs[i] = newAuditLog(t, db, postgres.AuditConfig{})
	}
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	var failed atomic.Int32
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := auditEvent(g*each + i)
				if err := logs[g%2].Record(context.Background(), e); err != nil {
					failed.Add(1)
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}

	reader, err := postgres.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	n, bad, ok := verifyAudit(t, reader)
	if !ok || n != goroutines*each || bad != 0 {
		t.Fatalf("verify: events=%d firstBad=%d ok=%v, want %d events ok", n, bad, ok, goroutines*each)
	}
	all, err := reader.AuditTrail().List(context.Background(), postgres.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int64]bool, len(all))
	for _, e := range all {
		seen[e.ID] = true
	}
	for id := int64(1); id <= goroutines*each; id++ {
		if !seen[id] {
			t.Fatalf("id %d missing (%d events)", id, len(all))
		}
	}
	var events, batches uint64
	for _, l := range logs {
		s := l.Stats()
		events, batches = events+s.Events, batches+s.Batches
	}
	if events != goroutines*each {
		t.Fatalf("stats count %d events", events)
	}
	t.Logf("%d events in %d transactions", events, batches)
}

func TestIntegrationAuditTrail_VerifyFindsTampering(t *testing.T) {
	tests := []struct {
		name         string
		sql          string
		wantEvents   int
		wantFirstBad int64
	}{
		{"a changed detail", `UPDATE audit_events SET detail = '{"results": 99}' WHERE id = 3`, 5, 3},
		{"a detail that is no object", `UPDATE audit_events SET detail = 'null' WHERE id = 3`, 5, 3},
		{"a changed actor", `UPDATE audit_events SET actor = 'mallory' WHERE id = 2`, 5, 2},
		{"a removed actor", `UPDATE audit_events SET actor = '' WHERE id = 4`, 5, 4},
		{"a changed time", `UPDATE audit_events SET at = at + interval '1 microsecond' WHERE id = 1`, 5, 1},
		{"a changed status and hash", `UPDATE audit_events SET status = 403, outcome = 'denied', hash = '\x00' WHERE id = 2`, 5, 2},
		{"a deleted event", `DELETE FROM audit_events WHERE id = 3`, 4, 3},
		{"the deleted last event", `DELETE FROM audit_events WHERE id = 5`, 4, 5},
		{"a moved head", `UPDATE audit_chain_head SET id = 4`, 5, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := pgtest.Store(t)
			l := newAuditLog(t, db, postgres.AuditConfig{})
			recordAudit(t, l, 5)
			if n, _, ok := verifyAudit(t, db); !ok || n != 5 {
				t.Fatalf("before: events=%d ok=%v", n, ok)
			}
			tamper(t, db, tt.sql)
			n, bad, ok := verifyAudit(t, db)
			if ok || n != tt.wantEvents || bad != tt.wantFirstBad {
				t.Fatalf("events=%d firstBad=%d ok=%v, want %d %d false", n, bad, ok, tt.wantEvents, tt.wantFirstBad)
			}
		})
	}
}

// The triggers refuse the service's own role, which owns the tables and is
// no superuser.
func TestIntegrationAuditEvents_AppendOnlyForTheServiceRole(t *testing.T) {
	_, serviceURL, role := pgtest.NewWithRole(t)
	ctx := context.Background()
	svc, err := postgres.New(ctx, serviceURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	var user string
	var super bool
	var owner string
	if err := svc.Pool().QueryRow(ctx, `SELECT current_user, rolsuper, (SELECT tableowner FROM pg_tables WHERE tablename = 'audit_events')
		FROM pg_roles WHERE rolname = current_user`).Scan(&user, &super, &owner); err != nil {
		t.Fatal(err)
	}
	if user != role || super || owner != role {
		t.Fatalf("connected as %s (superuser %v), audit_events owned by %s; want %s, not superuser, owner", user, super, owner, role)
	}

	recordAudit(t, newAuditLog(t, svc, postgres.AuditConfig{}), 2)
	for _, sql := range []string{
		`UPDATE audit_events SET actor = 'mallory' WHERE id = 1`,
		`DELETE FROM audit_events WHERE id = 2`,
		`TRUNCATE audit_events`,
		`DELETE FROM audit_chain_head`,
		`TRUNCATE audit_chain_head`,
		`INSERT INTO audit_chain_head (id, hash) VALUES (7, decode(repeat('00', 32), 'hex'))`,
	} {
		_, err := svc.Pool().Exec(ctx, sql)
		if err == nil {
			t.Errorf("%s: allowed", sql)
		} else {
			t.Logf("%s: %v", sql, err)
		}
	}
	var pgErr *pgconn.PgError
	if _, err := svc.Pool().Exec(ctx, `DELETE FROM audit_events`); !errors.As(err, &pgErr) || !strings.Contains(pgErr.Message, "append-only") {
		t.Errorf("DELETE: %v, want the append-only refusal", err)
	}
	if n, _, ok := verifyAudit(t, svc); !ok || n != 2 {
		t.Fatalf("after the attempts: events=%d ok=%v", n, ok)
	}
}

func TestIntegrationAuditLog_ReadyAndRecordFailWithoutPrivileges(t *testing.T) {
	for _, revoke := range []string{
		`REVOKE INSERT ON audit_events FROM %s`,
		`REVOKE UPDATE ON audit_chain_head FROM %s`,
	} {
		t.Run(revoke, func(t *testing.T) {
			adminURL, serviceURL, role := pgtest.NewWithRole(t)
			ctx := context.Background()
			svc, err := postgres.New(ctx, serviceURL)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(svc.Close)
			l := newAuditLog(t, svc, postgres.AuditConfig{})
			if err := l.Ready(ctx); err != nil {
				t.Fatalf("ready before: %v", err)
			}
			recordAudit(t, l, 1)

			admin, err := pgx.Connect(ctx, adminURL)
			if err != nil {
				t.Fatal(err)
			}
			defer admin.Close(ctx)
			if _, err := admin.Exec(ctx, fmt.Sprintf(revoke, role)); err != nil {
				t.Fatal(err)
			}
			if err := l.Ready(ctx); err == nil {
				t.Fatal("ready after the revoke")
			}
			if err := l.Record(ctx, auditEvent(1)); err == nil {
				t.Fatal("recorded after the revoke")
			}
			if s := l.Stats(); s.Events != 1 || s.Failed != 1 {
				t.Fatalf("stats %+v", s)
			}
			if n, _, ok := verifyAudit(t, svc); !ok || n != 1 {
				t.Fatalf("events=%d ok=%v", n, ok)
			}
		})
	}
}

// A database that does not answer in time fails the batch's callers,
// once: nothing is retried and the chain stays whole.
func TestIntegrationAuditLog_TimeOutFailsTheBatchAndWritesNothing(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{Timeout: 300 * time.Millisecond})
	ctx := context.Background()
	recordAudit(t, l, 1)

	// Another instance holds the chain head.
	holder, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := holder.Exec(ctx, `SELECT 1 FROM audit_chain_head FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	// The head is held until after every caller has returned: that they
	// return at all shows the time-out ended their wait, with no clock read.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = l.Record(ctx, auditEvent(i+1)) })
	}
	wg.Wait()
	for i, err := range errs {
		var pe *pgconn.PgError
		if !errors.Is(err, context.DeadlineExceeded) && !(errors.As(err, &pe) && pe.Code == "55P03") {
			t.Errorf("caller %d: %v while the head was locked, want the batch's time-out or lock_not_available", i, err)
		}
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	if err := l.Record(ctx, auditEvent(9)); err != nil {
		t.Fatalf("after the lock: %v", err)
	}
	if n, _, ok := verifyAudit(t, db); !ok || n != 2 {
		t.Fatalf("events=%d ok=%v, want 2 (the failed ones not written)", n, ok)
	}
}

func TestIntegrationAuditLog_CloseFlushesThenRefuses(t *testing.T) {
	db := pgtest.Store(t)
	l, err := db.AuditLog(postgres.AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	go l.Run()
	var wg sync.WaitGroup
	var recorded, refused atomic.Int32
	for i := range 50 {
		wg.Go(func() {
			switch err := l.Record(context.Background(), auditEvent(i)); {
			case err == nil:
				recorded.Add(1)
			case errors.Is(err, postgres.ErrAuditLogClosed):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	l.Close()
	wg.Wait()
	if recorded.Load()+refused.Load() != 50 {
		t.Fatalf("recorded %d, refused %d", recorded.Load(), refused.Load())
	}
	// Every accepted event was written before Close returned.
	if n, _, ok := verifyAudit(t, db); !ok || n != int(recorded.Load()) {
		t.Fatalf("events=%d ok=%v, recorded %d", n, ok, recorded.Load())
	}
	if err := l.Record(context.Background(), auditEvent(0)); !errors.Is(err, postgres.ErrAuditLogClosed) {
		t.Fatalf("record after close: %v", err)
	}
	if err := l.Ready(context.Background()); !errors.Is(err, postgres.ErrAuditLogClosed) {
		t.Fatalf("ready after close: %v", err)
	}
	l.Close() // twice is harmless
}

func TestIntegrationAuditLog_RecordHonoursItsContext(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Record(ctx, auditEvent(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("record: %v", err)
	}
	l.Close()
	if n, _, ok := verifyAudit(t, db); !ok || n != 0 {
		t.Fatalf("events=%d ok=%v: a cancelled caller's event was written", n, ok)
	}
}

func TestIntegrationAuditTrail_ListFilters(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	recordAudit(t, l, 12) // at t0 + i minutes; actor alice/bob alternating; action cycling over 3
	ids := func(events []audit.Event) []int64 {
		out := []int64{}
		for _, e := range events {
			out = append(out, e.ID)
		}
		return out
	}
	tests := []struct {
		name string
		f    postgres.AuditFilter
		want []int64
	}{
		{"everything", postgres.AuditFilter{}, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}},
		{"since, inclusive", postgres.AuditFilter{Since: auditT0.Add(9 * time.Minute)}, []int64{10, 11, 12}},
		{"actor", postgres.AuditFilter{Actor: "bob"}, []int64{2, 4, 6, 8, 10, 12}},
		{"action", postgres.AuditFilter{Action: audit.BlobDownload}, []int64{2, 5, 8, 11}},
		{"the most recent, oldest first", postgres.AuditFilter{Limit: 3}, []int64{10, 11, 12}},
		{"actor and action", postgres.AuditFilter{Actor: "alice", Action: audit.PatientSearch}, []int64{1, 7}},
		{"all together", postgres.AuditFilter{Since: auditT0.Add(time.Minute), Actor: "alice", Action: audit.PatientSearch, Limit: 2}, []int64{7}},
		{"business", postgres.AuditFilter{Business: auditBusiness}, []int64{4, 8, 12}},
		{"business and actor", postgres.AuditFilter{Business: auditBusiness, Actor: "bob"}, []int64{4, 8, 12}},
		{"another business", postgres.AuditFilter{Business: "00000000-0000-4000-8000-000000000000"}, []int64{}},
		{"nothing", postgres.AuditFilter{Actor: "carol"}, []int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := db.AuditTrail().List(context.Background(), tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids(got)) != fmt.Sprint(tt.want) {
				t.Fatalf("ids %v, want %v", ids(got), tt.want)
			}
		})
	}
	if _, err := db.AuditTrail().List(context.Background(), postgres.AuditFilter{Business: "biz-1"}); err == nil ||
		!strings.Contains(err.Error(), "not a UUID") {
		t.Fatalf("a business id that is not a UUID: %v", err)
	}
}

// go test -run '^$' -bench AuditRecord ./adapters/postgres: events/s with 32
// and 64 concurrent callers of one AuditLog, the events per transaction, and
// the WAL fsyncs per event (pg_stat_wal's wal_sync over the run: the whole
// server's, so other databases' commits count too).
func BenchmarkAuditRecord(b *testing.B) {
	for _, callers := range []int{32, 64} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			db := pgtest.Store(b)
			l, err := db.AuditLog(postgres.AuditConfig{})
			if err != nil {
				b.Fatal(err)
			}
			go l.Run()
			defer l.Close()
			syncs := walSyncs(b, db)
			var i atomic.Int64
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.Record(context.Background(), auditEvent(int(i.Add(1)))); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			s := l.Stats()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(s.Events)/float64(max(1, s.Batches)), "events/tx")
			b.ReportMetric(float64(walSyncs(b, db)-syncs)/float64(max(1, s.Events)), "fsyncs/event")
		})
	}
}

// walSyncs is the server's count of WAL fsyncs so far (pg_stat_wal).
func walSyncs(b *testing.B, db *postgres.Store) int64 {
	var n int64
	if err := db.Pool().QueryRow(context.Background(), `SELECT wal_sync FROM pg_stat_wal`).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// refuseAction makes the database refuse every audit event of action, as
// a failure of that one event would.
func refuseAction(t *testing.T, db *postgres.Store, action audit.Action) {
	t.Helper()
	_, err := db.Pool().Exec(context.Background(), fmt.Sprintf(`
		CREATE FUNCTION refuse_audit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.action = '%s' THEN RAISE EXCEPTION 'refused for the test'; END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER refuse_audit BEFORE INSERT ON audit_events FOR EACH ROW EXECUTE FUNCTION refuse_audit()`, action))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.Pool().Exec(context.Background(), `DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()`)
	})
}

func count(t *testing.T, db *postgres.Store, sql string) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIntegrationBlobRepo_CommitsTheRequestsAuditEventWithTheChange(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	repo := db.Blobs()
	recordAudit(t, l, 3) // the writer now caches the chain head

	pending := func(action audit.Action, status int) (context.Context, *audit.Pending) {
		p := &audit.Pending{Event: audit.Event{RequestID: "req-" + string(action), Actor: "alice", Action: action,
			ResourceType: "blob", Outcome: audit.Success, Status: status}}
		return audit.WithPending(context.Background(), p), p
	}
	b := storage.Blob{Name: "obj-1", Container: storage.ContainerUploads, OriginalFilename: "a.txt",
		ContentType: "text/plain", Size: 1, UploadedBy: "alice", SHA256: "ab"}
	ctx, p := pending(audit.BlobUpload, 201)
	if err := repo.Insert(ctx, &b); err != nil || !p.Committed() {
		t.Fatalf("insert: %v, committed %v", err, p.Committed())
	}
	recordAudit(t, l, 2) // after a head the writer did not move
	ctx, p = pending(audit.BlobDelete, 200)
	if _, err := repo.Delete(ctx, b.ID); err != nil || !p.Committed() {
		t.Fatalf("delete: %v, committed %v", err, p.Committed())
	}
	// Without a pending event (a business logo) nothing is audited.
	logo := b
	if err := repo.Insert(context.Background(), &logo); err != nil {
		t.Fatal(err)
	}

	events, err := db.AuditTrail().List(context.Background(), postgres.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 7 {
		t.Fatalf("%d events, want 7: %+v", len(events), events)
	}
	slices.SortFunc(events, func(a, b audit.Event) int { return cmp.Compare(a.ID, b.ID) }) // in chain order
	id := fmt.Sprint(b.ID)
	for i, want := range map[int]audit.Event{3: {Action: audit.BlobUpload, Status: 201}, 6: {Action: audit.BlobDelete, Status: 200}} {
		e := events[i]
		if e.Action != want.Action || e.Status != want.Status || e.ResourceID != id || e.Outcome != audit.Success ||
			e.RequestID != "req-"+string(want.Action) || e.At.IsZero() {
			t.Errorf("event %d: %+v", i, e)
		}
	}
	if n, bad, ok := verifyAudit(t, db); !ok || n != 7 {
		t.Fatalf("verify: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
}

func TestIntegrationBlobRepo_AChangeWhoseEventIsRefusedIsNotMade(t *testing.T) {
	db := pgtest.Store(t)
	repo := db.Blobs()
	kept := storage.Blob{Name: "obj-1", Container: storage.ContainerUploads, OriginalFilename: "a.txt",
		ContentType: "text/plain", Size: 1, UploadedBy: "alice", SHA256: "ab"}
	if err := repo.Insert(context.Background(), &kept); err != nil {
		t.Fatal(err)
	}
	rowsBefore, eventsBefore := count(t, db, `SELECT count(*) FROM blob_entries`), count(t, db, `SELECT count(*) FROM events`)

	for _, action := range []audit.Action{audit.BlobUpload, audit.BlobDelete} {
		refuseAction(t, db, action)
		p := &audit.Pending{Event: audit.Event{RequestID: "r", Actor: "alice", Action: action, ResourceType: "blob",
			Outcome: audit.Success, Status: 200}}
		ctx := audit.WithPending(context.Background(), p)
		var err error
		if action == audit.BlobUpload {
			b := kept
			b.Name = "obj-2"
			err = repo.Insert(ctx, &b)
		} else {
			_, err = repo.Delete(ctx, kept.ID)
		}
		if !errors.Is(err, audit.ErrUnavailable) || p.Committed() {
			t.Fatalf("%s: %v, committed %v; want audit_unavailable", action, err, p.Committed())
		}
		if _, err := db.Pool().Exec(context.Background(), `DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()`); err != nil {
			t.Fatal(err)
		}
	}
	if r, e := count(t, db, `SELECT count(*) FROM blob_entries`), count(t, db, `SELECT count(*) FROM events`); r != rowsBefore || e != eventsBefore {
		t.Fatalf("%d rows and %d outbox events, want %d and %d: a change was made unaudited", r, e, rowsBefore, eventsBefore)
	}
	if n := count(t, db, `SELECT count(*) FROM audit_events`); n != 0 {
		t.Fatalf("%d audit events", n)
	}
	if _, _, ok := verifyAudit(t, db); !ok {
		t.Fatal("chain broken")
	}
}

func TestIntegrationAuditLog_StoresStartedEvents(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{})
	e := audit.Event{RequestID: "r-1", Actor: "alice", Action: audit.AppointmentCancel, ResourceType: "appointment",
		ResourceID: "apt-1", Outcome: audit.Started}
	if err := l.Record(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	got, err := db.AuditTrail().List(context.Background(), postgres.AuditFilter{})
	if err != nil || len(got) != 1 || got[0].Outcome != audit.Started || got[0].Status != 0 {
		t.Fatalf("%v: %+v", err, got)
	}
	if _, _, ok := verifyAudit(t, db); !ok {
		t.Fatal("chain broken")
	}
}

func TestIntegrationAuditLog_ARefusedEventFailsAloneInItsBatch(t *testing.T) {
	db := pgtest.Store(t)
	l := newAuditLog(t, db, postgres.AuditConfig{Timeout: 30 * time.Second})
	refuseAction(t, db, audit.BlobDelete)
	ctx := context.Background()
	// Hold the chain head so that the writer waits and the events queue up
	// behind it: they are then written as one batch.
	tx, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM audit_chain_head FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := auditEvent(i)
			if i == n/2 {
				e.Action = audit.BlobDelete
			}
			errs[i] = l.Record(ctx, e)
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the writer never waited for the chain head")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if (i == n/2) != (err != nil) {
			t.Errorf("event %d: %v", i, err)
		}
	}
	if got := count(t, db, `SELECT count(*) FROM audit_events`); got != n-1 {
		t.Fatalf("%d events stored, want %d", got, n-1)
	}
	if _, _, ok := verifyAudit(t, db); !ok {
		t.Fatal("chain broken")
	}
}

// A chain written before events carried a business (hashes over the former
// canonical form, no business_id) still verifies, and events appended after
// it, with a business or without, extend it.
func TestIntegrationAuditTrail_FormerEventsWithoutBusinessStillVerify(t *testing.T) {
	db := pgtest.Store(t)
	// Written as the former writer did: its canonical form, typed out here.
	former := []byte(`{"id":1,"at":"2025-03-01T09:00:00Z","requestId":"r-old","actor":"alice",` +
		`"action":"blob.download","resourceType":"blob","resourceId":"7","outcome":"success","status":200,"detail":{}}`)
	h := sha256.Sum256(append(postgres.AuditGenesis(), former...))
	for _, sql := range []string{`INSERT INTO audit_events (id, at, request_id, actor, action, resource_type,
			resource_id, outcome, status, detail, hash)
		VALUES (1, '2025-03-01T09:00:00Z', 'r-old', 'alice', 'blob.download', 'blob', '7', 'success', 200, '{}', $1)`,
		`UPDATE audit_chain_head SET id = 1, hash = $1`} {
		if _, err := db.Pool().Exec(context.Background(), sql, h[:]); err != nil {
			t.Fatal(err)
		}
	}
	if n, bad, ok := verifyAudit(t, db); !ok || n != 1 {
		t.Fatalf("the former chain: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
	l := newAuditLog(t, db, postgres.AuditConfig{})
	recordAudit(t, l, 4) // the last has a business
	if n, bad, ok := verifyAudit(t, db); !ok || n != 5 {
		t.Fatalf("extended: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
	// The business is covered by the hash.
	tamper(t, db, `UPDATE audit_events SET business_id = gen_random_uuid() WHERE id = 5`)
	if n, bad, ok := verifyAudit(t, db); ok || n != 5 || bad != 5 {
		t.Fatalf("changed business: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
}

// A blob entry is read with the business of its location, and the audit
// events committed with its upload and its removal name that business; an
// entry without a location, or whose location is not a number, names none.
func TestIntegrationBlobRepo_NamesTheBusinessOfTheBlobsLocation(t *testing.T) {
	db := pgtest.Store(t)
	repo := db.Blobs()
	biz := seedBusiness(t, db, "owner-biz")
	loc := seedLocation(t, db, biz, "Main street")
	for _, tt := range []struct{ name, location, want string }{
		{"at a location", fmt.Sprint(loc.ID), biz.ID},
		{"without a location", "", ""},
		{"at a location that is not a number", "main", ""},
		{"at a location that does not exist", "999999", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pending := func(action audit.Action) (context.Context, *audit.Pending) {
				p := &audit.Pending{Event: audit.Event{RequestID: "r-" + tt.name, Actor: "alice", Action: action,
					ResourceType: "blob", Outcome: audit.Success, Status: 200}}
				return audit.WithPending(context.Background(), p), p
			}
			b := storage.Blob{Name: "obj-" + tt.name, Container: storage.ContainerUploads, OriginalFilename: "a.txt",
				ContentType: "text/plain", Size: 1, UploadedBy: "alice", SHA256: "ab", BusinessLocationID: tt.location}
			ctx, p := pending(audit.BlobUpload)
			if err := repo.Insert(ctx, &b); err != nil || !p.Committed() || b.BusinessID != tt.want {
				t.Fatalf("insert: %v, committed %v, business %q", err, p.Committed(), b.BusinessID)
			}
			got, err := repo.Get(context.Background(), b.ID)
			if err != nil || got.BusinessID != tt.want {
				t.Fatalf("get: %v, business %q, want %q", err, got.BusinessID, tt.want)
			}
			ctx, p = pending(audit.BlobDelete)
			if _, err := repo.Delete(ctx, b.ID); err != nil || !p.Committed() {
				t.Fatalf("delete: %v, committed %v", err, p.Committed())
			}
			events, err := db.AuditTrail().List(context.Background(), postgres.AuditFilter{})
			if err != nil {
				t.Fatal(err)
			}
			events = events[len(events)-2:]
			for _, e := range events {
				if e.RequestID != "r-"+tt.name || e.ResourceID != fmt.Sprint(b.ID) || e.BusinessID != tt.want {
					t.Errorf("%s event: %+v, want business %q", e.Action, e, tt.want)
				}
			}
		})
	}
	if n, bad, ok := verifyAudit(t, db); !ok || n != 8 {
		t.Fatalf("verify: events=%d firstBad=%d ok=%v", n, bad, ok)
	}
}
