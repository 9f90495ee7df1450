package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestIntegrationWithLock_SerialisesTheSameKeyOnly(t *testing.T) {
	db := pgtest.Store(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.WithLock(context.Background(), "agent:dr-1", func(context.Context) error {
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				inside.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders at once", most.Load())
	}
	// Another key is not blocked by a held one.
	release := hold(t, db, "agent:a")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := db.WithLock(ctx, "agent:b", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	release()
	boom := errors.New("boom")
	if err := db.WithLock(context.Background(), "agent:a", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}
}

// hold takes key's lock in a goroutine and returns once it is held; the
// function returned lets it go and waits until WithLock has returned.
func hold(t *testing.T, db *postgres.Store, key string) (release func()) {
	t.Helper()
	held, done, out := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		out <- db.WithLock(context.Background(), key, func(context.Context) error {
			close(held)
			<-done
			return nil
		})
	}()
	select {
	case <-held:
	case err := <-out:
		t.Fatalf("hold %s: %v", key, err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			close(done)
			if err := <-out; err != nil {
				t.Errorf("hold %s: %v", key, err)
			}
		})
	}
	t.Cleanup(release)
	return release
}

// lockStore is a store on a fresh database whose URL carries params.
func lockStore(t *testing.T, params string) *postgres.Store {
	t.Helper()
	u := pgtest.New(t)
	if strings.Contains(u, "?") {
		u += "&" + params
	} else {
		u += "?" + params
	}
	db, err := postgres.New(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func TestIntegrationWithLock_AHeldKeyIsAgentBusyAfterTheLockWait(t *testing.T) {
	db := lockStore(t, "pool_lock_wait=300ms")
	release := hold(t, db, "agent:dr-1")
	ran := false
	start := time.Now()
	err := db.WithLock(context.Background(), "agent:dr-1", func(context.Context) error { ran = true; return nil })
	waited := time.Since(start)
	if !errors.Is(err, ehr.ErrAgentBusy) || core.KindOf(err) != core.KindConflict {
		t.Fatalf("a held key: %v", err)
	}
	if ran {
		t.Fatal("fn ran without the lock")
	}
	if waited < 250*time.Millisecond || waited > 2*time.Second {
		t.Fatalf("waited %s for a lock wait of 300ms", waited)
	}
	// The waiter's session took nothing with it: once let go, the key is
	// free, and a waiter that arrives in time gets it.
	got := make(chan error, 1)
	go func() {
		got <- db.WithLock(context.Background(), "agent:dr-1", func(context.Context) error { return nil })
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("after release: %v", err)
	}
}

func TestIntegrationWithLock_LockHoldersCannotTakeTheMainPool(t *testing.T) {
	// A main pool of one connection, and two lock connections.
	db := lockStore(t, "pool_max_conns=1&pool_max_lock_conns=2&pool_lock_wait=300ms")
	hold(t, db, "agent:a")
	hold(t, db, "agent:b")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var one int
	if err := db.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
		t.Fatalf("a read while bookings hold their locks: %v", err)
	}
	// A third booking finds no lock connection: it is answered, not queued
	// for ever, and takes no connection of the main pool meanwhile.
	err := db.WithLock(context.Background(), "agent:c", func(context.Context) error { return nil })
	if !errors.Is(err, ehr.ErrBookingBusy) || core.KindOf(err) != core.KindUnavailable {
		t.Fatalf("a third holder: %v", err)
	}
	if n := db.Pool().Stat().AcquiredConns(); n != 0 {
		t.Fatalf("lock holders took %d connections of the main pool", n)
	}
}

func TestNew_RefusesBadLockParameters(t *testing.T) {
	for _, q := range []string{"pool_max_lock_conns=0", "pool_max_lock_conns=x", "pool_lock_wait=-1s", "pool_lock_wait=5"} {
		if _, err := postgres.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?"+q); err == nil || !strings.Contains(err.Error(), strings.Split(q, "=")[0]) {
			t.Errorf("%s: %v", q, err)
		}
	}
}

func TestIntegrationIdempotency_ClaimCompleteReplay(t *testing.T) {
	ctx := context.Background()
	idem := pgtest.Store(t).Idempotency()
	if _, done, err := idem.Claim(ctx, "alice", "k1", []string{"fp-a"}); err != nil || done {
		t.Fatalf("first claim: %v %v", done, err)
	}
	if _, _, err := idem.Claim(ctx, "alice", "k1", []string{"fp-a"}); !errors.Is(err, ehr.ErrIdempotencyInProgress) {
		t.Fatalf("claim while running: %v", err)
	}
	if err := idem.Complete(ctx, "alice", "k1", []byte(`{"appointmentId":"a-1","status":"booked"}`), nil); err != nil {
		t.Fatal(err)
	}
	out, done, err := idem.Claim(ctx, "alice", "k1", []string{"fp-a"})
	if err != nil || !done || string(out) != `{"status": "booked", "appointmentId": "a-1"}` {
		t.Fatalf("replay: %q %v %v", out, done, err)
	}
	if _, _, err := idem.Claim(ctx, "alice", "k1", []string{"fp-b"}); !errors.Is(err, ehr.ErrIdempotencyKeyReused) {
		t.Fatalf("another request with the key: %v", err)
	}
	if _, done, err := idem.Claim(ctx, "bob", "k1", []string{"fp-b"}); err != nil || done {
		t.Fatalf("the key is per caller: %v %v", done, err)
	}
	if err := idem.Release(ctx, "bob", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, done, err := idem.Claim(ctx, "bob", "k1", []string{"fp-c"}); err != nil || done {
		t.Fatalf("after release: %v %v", done, err)
	}
}

func TestIntegrationBookings_RecordedWithTheOutcome(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	idem, bookings := db.Idempotency(), db.Bookings()
	if _, _, err := idem.Claim(ctx, "ana", "k1", []string{"fp"}); err != nil {
		t.Fatal(err)
	}
	if err := idem.Complete(ctx, "ana", "k1", []byte(`{"appointmentId":"a-2"}`), &ehr.Booking{Subject: "ana", AppointmentID: "a-2"}); err != nil {
		t.Fatal(err)
	}
	if err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1"}); err != nil {
		t.Fatal(err)
	}
	if err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1"}); err != nil {
		t.Fatalf("recording again: %v", err)
	}
	if err := bookings.Record(ctx, ehr.Booking{Subject: "ben", AppointmentID: "b-1"}); err != nil {
		t.Fatal(err)
	}
	ids, err := bookings.BookedBy(ctx, "ana")
	if err != nil || len(ids) != 2 || ids[0] != "a-2" || ids[1] != "a-1" {
		t.Fatalf("ana's bookings, oldest first: %v %v", ids, err)
	}
	for _, tt := range []struct {
		sub, id string
		want    bool
	}{{"ana", "a-1", true}, {"ana", "a-2", true}, {"ana", "b-1", false}, {"ben", "b-1", true}, {"ben", "a-1", false}} {
		if ok, err := bookings.IsBookedBy(ctx, tt.sub, tt.id); err != nil || ok != tt.want {
			t.Errorf("IsBookedBy(%s, %s) = %v %v", tt.sub, tt.id, ok, err)
		}
	}

	// A failing booking record fails the outcome with it: neither is kept.
	if _, _, err := idem.Claim(ctx, "ana", "k2", []string{"fp"}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Pool().Exec(ctx, `ALTER TABLE appointment_bookings ADD CONSTRAINT no_x CHECK (appointment_id <> 'x')`); err != nil {
		t.Fatal(err)
	}
	if err := idem.Complete(ctx, "ana", "k2", []byte(`{"appointmentId":"x"}`), &ehr.Booking{Subject: "ana", AppointmentID: "x"}); err == nil {
		t.Fatal("Complete succeeded with a booking that cannot be recorded")
	}
	if _, _, err := idem.Claim(ctx, "ana", "k2", []string{"fp"}); !errors.Is(err, ehr.ErrIdempotencyInProgress) {
		t.Fatalf("the outcome was kept without its booking: %v", err)
	}
}

func TestIntegrationIdempotency_ExpiresAfterRetention(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	idem := db.Idempotency()
	for _, k := range []string{"old", "new"} {
		if _, _, err := idem.Claim(ctx, "ana", k, []string{"fp-1"}); err != nil {
			t.Fatal(err)
		}
		if err := idem.Complete(ctx, "ana", k, []byte(`{"appointmentId":"a"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'`); err != nil {
		t.Fatal(err)
	}
	// An expired key is a new request, even for another fingerprint.
	if _, done, err := idem.Claim(ctx, "ana", "old", []string{"fp-2"}); err != nil || done {
		t.Fatalf("claim of an expired key: %v %v", done, err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'`); err != nil {
		t.Fatal(err)
	}
	n, err := idem.PurgeIdempotency(ctx, 100)
	if err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if _, done, err := idem.Claim(ctx, "ana", "new", []string{"fp-1"}); err != nil || !done {
		t.Fatalf("a fresh key was purged: %v %v", done, err)
	}
}

// Two instances purging at once remove every expired key once between them.
func TestIntegrationIdempotency_TwoInstancesPurgeAtOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	if _, err := db.Pool().Exec(ctx, `
		INSERT INTO idempotency_keys (subject, key, fingerprint, outcome, created_at, completed_at)
		SELECT 'u', 'k' || i, 'fp', '{}', now() - interval '25 hours', now() - interval '25 hours' FROM generate_series(1, 2500) i`); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.Idempotency().Claim(ctx, "u", "fresh", []string{"fp"}); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.New(ctx, db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var wg sync.WaitGroup
	counts := make([]int64, 2)
	for i, s := range []*postgres.Store{db, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := s.Idempotency().PurgeIdempotency(ctx, 100)
				if err != nil {
					t.Error(err)
					return
				}
				counts[i] += n
				if n < 100 {
					return
				}
			}
		}()
	}
	wg.Wait()
	var left int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if counts[0]+counts[1] != 2500 || left != 1 {
		t.Fatalf("purged %d + %d, %d keys left; want 2500 purged and the fresh key kept", counts[0], counts[1], left)
	}
}
