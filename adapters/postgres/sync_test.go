package postgres_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

// expireLease ends system's running lease, as if its holder had stalled
// past it.
func expireLease(t *testing.T, db *postgres.Store, system string) {
	t.Helper()
	if _, err := db.Pool().Exec(context.Background(), `UPDATE ehr_sync_cursors SET lease_until = now() - interval '1 second' WHERE system = $1`, system); err != nil {
		t.Fatal(err)
	}
}

func claim(t *testing.T, s *postgres.Sync, system, owner string) (ehr.SyncCursor, bool) {
	t.Helper()
	c, held, err := s.Claim(context.Background(), system, owner, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return c, held
}

func TestIntegrationSync_OneOwnerHoldsTheLeaseUntilItRunsOut(t *testing.T) {
	db := pgtest.Store(t)
	s := db.Sync()
	const n = 8
	held := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, held[i], _ = s.Claim(context.Background(), "clinic-a", string(rune('a'+i)), time.Minute)
		}()
	}
	wg.Wait()
	winner := slices.Index(held, true)
	if winner < 0 || slices.Index(held[winner+1:], true) >= 0 {
		t.Fatalf("claims held: %v, want exactly one", held)
	}
	owner, other := string(rune('a'+winner)), "other"
	if _, ok := claim(t, s, "clinic-a", other); ok {
		t.Fatal("a running lease was taken over")
	}
	if _, ok := claim(t, s, "clinic-a", owner); !ok {
		t.Fatal("the holder could not renew its lease")
	}
	if _, ok := claim(t, s, "clinic-b", other); !ok {
		t.Fatal("another system's lease is not free")
	}
	expireLease(t, db, "clinic-a")
	if _, ok := claim(t, s, "clinic-a", other); !ok {
		t.Fatal("a lease that ran out was not handed over")
	}
	if _, ok := claim(t, s, "clinic-a", owner); ok {
		t.Fatal("the first holder took the lease back")
	}
}

func TestIntegrationSync_AdvanceIsRefusedOnceTheLeaseMoved(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	s, tx := db.Sync(), db.EHRTx()
	claim(t, s, "clinic-a", "one")
	w1 := time.Date(2030, 3, 1, 10, 0, 0, 123456000, time.UTC)
	batch := func(owner string, w time.Time, id string) error {
		return tx.WithinTx(ctx, func(ctx context.Context, r ehr.Repos) error {
			if err := r.Sync.Hold(ctx, "clinic-a", owner, time.Minute); err != nil {
				return err
			}
			if err := r.Sync.Remember(ctx, "clinic-a", ehr.AppointmentState{ID: id, AgentID: "dr-1", Status: ehr.StatusBooked, Start: w, End: w.Add(time.Hour)}); err != nil {
				return err
			}
			return r.Sync.Advance(ctx, "clinic-a", ehr.SyncCursor{Watermark: w, Baselined: true})
		})
	}
	if err := batch("one", w1, "a-1"); err != nil {
		t.Fatal(err)
	}
	expireLease(t, db, "clinic-a")
	if c, ok := claim(t, s, "clinic-a", "two"); !ok || !c.Watermark.Equal(w1) || !c.Baselined {
		t.Fatalf("the next holder got %+v, held %v", c, ok)
	}
	err := batch("one", w1.Add(time.Hour), "a-2")
	if !errors.Is(err, ehr.ErrSyncLeaseLost) {
		t.Fatalf("a batch after the lease moved: %v", err)
	}
	known, err := s.Known(ctx, "clinic-a", []string{"a-1", "a-2"})
	if err != nil || len(known) != 1 {
		t.Fatalf("known %v, %v: the refused batch wrote", known, err)
	}
	// The watermark never goes back; a zero one leaves it.
	if err := batch("two", w1.Add(-time.Hour), "a-3"); err != nil {
		t.Fatal(err)
	}
	if err := batch("two", time.Time{}, "a-4"); err != nil {
		t.Fatal(err)
	}
	if c, _ := claim(t, s, "clinic-a", "two"); !c.Watermark.Equal(w1) {
		t.Fatalf("watermark %v, want %v", c.Watermark, w1)
	}
}

// Rewind sets a watermark back only when it lies after the time given:
// an earlier one, or none, stays.
func TestIntegrationSync_RewindSetsBackOnlyAWatermarkPastIt(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	s := db.Sync()
	claim(t, s, "clinic-a", "one")
	if err := s.Rewind(ctx, "clinic-a", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if c, _ := claim(t, s, "clinic-a", "one"); !c.Watermark.IsZero() {
		t.Fatalf("a cursor without a watermark got %v", c.Watermark)
	}
	odd := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := s.Advance(ctx, "clinic-a", ehr.SyncCursor{Watermark: odd, Baselined: true}); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct{ to, want time.Time }{
		{time.Date(2030, 3, 1, 10, 0, 0, 123456000, time.UTC), time.Date(2030, 3, 1, 10, 0, 0, 123456000, time.UTC)},
		{odd, time.Date(2030, 3, 1, 10, 0, 0, 123456000, time.UTC)}, // later than the watermark: it stays
	} {
		if err := s.Rewind(ctx, "clinic-a", step.to); err != nil {
			t.Fatal(err)
		}
		if c, _ := claim(t, s, "clinic-a", "one"); !c.Watermark.Equal(step.want) || !c.Baselined {
			t.Fatalf("rewind to %v: cursor %+v, want watermark %v, baselined", step.to, c, step.want)
		}
	}
}

func TestIntegrationSync_RemembersStatesAndReadsThemBack(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	s := db.Sync()
	day := time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC)
	state := func(id string, hh int, st ehr.AppointmentStatus) ehr.AppointmentState {
		start := day.Add(time.Duration(hh) * time.Hour)
		return ehr.AppointmentState{ID: id, AgentID: "dr-1", Version: "v-" + id, Status: st, Start: start, End: start.Add(30 * time.Minute), Business: "biz-1"}
	}
	states := []ehr.AppointmentState{state("a-9", 9, ehr.StatusBooked), state("a-10", 10, ehr.StatusCheckedIn),
		state("a-11", 11, ehr.StatusCancelled), state("a-30", 30, ehr.StatusBooked)}
	for _, st := range states {
		if err := s.Remember(ctx, "clinic-a", st); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Remember(ctx, "clinic-b", state("a-9", 12, ehr.StatusNoShow)); err != nil { // another system's a-9
		t.Fatal(err)
	}
	moved := state("a-9", 8, ehr.StatusPending)
	if err := s.Remember(ctx, "clinic-a", moved); err != nil {
		t.Fatal(err)
	}
	known, err := s.Known(ctx, "clinic-a", []string{"a-9", "a-11", "missing"})
	want := map[string]ehr.AppointmentState{"a-9": moved, "a-11": states[2]}
	if err != nil || !maps.Equal(known, want) {
		t.Fatalf("known %+v, %v; want %+v", known, err, want)
	}
	window, err := s.KnownBetween(ctx, "clinic-a", day, day.Add(24*time.Hour), 10)
	if err != nil || len(window) != 2 || window[0].ID != "a-9" || window[1].ID != "a-10" {
		t.Fatalf("window %+v, %v: want a-9 and a-10, the cancelled and the next day's left out", window, err)
	}
	if w, _ := s.KnownBetween(ctx, "clinic-a", day, day.Add(24*time.Hour), 1); len(w) != 1 {
		t.Fatalf("max 1 gave %d", len(w))
	}
	if k, err := s.Known(ctx, "clinic-a", nil); err != nil || len(k) != 0 {
		t.Fatalf("no ids: %v, %v", k, err)
	}
}

// The booking log answers for one EHR system: an appointment id booked in
// another system is not this one's.
func TestIntegrationSync_BookedReadsTheBookingLogOfOneSystem(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	for _, b := range []ehr.Booking{{Subject: "ana", Business: "biz-1", System: "clinic-a", AppointmentID: "a-1"},
		{Subject: "bob", Business: "biz-1", System: "clinic-a", AppointmentID: "a-1"}, {Subject: "ana", Business: "biz-2", System: "clinic-a", AppointmentID: "a-1"},
		{Subject: "ana", System: "clinic-a", AppointmentID: "a-2"}, {Subject: "cy", Business: "biz-3", System: "clinic-b", AppointmentID: "a-3"}} {
		if _, err := db.Bookings().Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Sync().Booked(ctx, "clinic-a", []string{"a-1", "a-2", "a-3"})
	want := map[string][]string{"a-1": {"biz-1", "biz-2"}, "a-2": {""}}
	if err != nil || len(got) != len(want) || !slices.Equal(got["a-1"], want["a-1"]) || !slices.Equal(got["a-2"], want["a-2"]) {
		t.Fatalf("booked in clinic-a %v, %v; want %v", got, err, want)
	}
	if got, err := db.Sync().Booked(ctx, "clinic-b", []string{"a-1", "a-3"}); err != nil || len(got) != 1 || !slices.Equal(got["a-3"], []string{"biz-3"}) {
		t.Fatalf("booked in clinic-b %v, %v", got, err)
	}
}

func TestIntegrationSync_APIPathsRememberWithTheirEvent(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	start := time.Date(2030, 3, 5, 9, 0, 0, 0, time.UTC)
	st := ehr.AppointmentState{ID: "a-1", AgentID: "dr-1", Status: ehr.StatusCancelled, Start: start, End: start.Add(time.Hour)}
	write := func(fail error) error {
		return db.EHRTx().WithinTx(ctx, func(ctx context.Context, r ehr.Repos) error {
			if err := r.Sync.Remember(ctx, "clinic-a", st); err != nil {
				return err
			}
			e := core.AppointmentEvent(core.AppointmentCancelled, core.OriginAPI, st.ID, st.AgentID, string(st.Status), st.Start, st.End, "")
			if err := r.Outbox.Emit(ctx, e); err != nil {
				return err
			}
			return fail
		})
	}
	events := func() (n int) {
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM events WHERE type = 'appointment.cancelled'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := write(errors.New("the change failed")); err == nil {
		t.Fatal("no error")
	}
	if k, _ := db.Sync().Known(ctx, "clinic-a", []string{"a-1"}); len(k) != 0 || events() != 0 {
		t.Fatalf("a rolled-back transaction left state %v or an event", k)
	}
	if err := write(nil); err != nil {
		t.Fatal(err)
	}
	if k, _ := db.Sync().Known(ctx, "clinic-a", []string{"a-1"}); k["a-1"] != st || events() != 1 {
		t.Fatalf("state %+v, %d events", k, events())
	}
}

func TestIntegrationSync_StatusTellsTheLastPoll(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	s := db.Sync()
	if _, found, err := s.Status(ctx, "clinic-a"); found || err != nil {
		t.Fatalf("status before any claim: %v, %v", found, err)
	}
	claim(t, s, "clinic-a", "one")
	if err := s.Polled(ctx, "clinic-a", "one", "ehr_unavailable"); err != nil {
		t.Fatal(err)
	}
	st, found, err := s.Status(ctx, "clinic-a")
	if err != nil || !found || st.LastError != "ehr_unavailable" || st.LastPollAt.IsZero() || !st.Watermark.IsZero() {
		t.Fatalf("status %+v, %v, %v", st, found, err)
	}
}

// intentAt is an intent of appointment id of dr-1 at hh:00 on 2030-03-05.
func intentAt(id, appt string, st ehr.AppointmentStatus, hh int) ehr.PendingChange {
	start := time.Date(2030, 3, 5, hh, 0, 0, 0, time.UTC)
	return ehr.PendingChange{ID: id, AppointmentID: appt, AgentID: "dr-1", Status: st, Start: start, End: start.Add(30 * time.Minute), Business: "biz-1"}
}

func intend(t *testing.T, s *postgres.Sync, system string, lease time.Duration, ps ...ehr.PendingChange) {
	t.Helper()
	for _, p := range ps {
		if err := s.Intend(context.Background(), system, p, lease); err != nil {
			t.Fatal(err)
		}
	}
}

func settle(t *testing.T, s *postgres.Sync, id string) (ehr.PendingChange, bool) {
	t.Helper()
	p, found, err := s.Settle(context.Background(), "clinic-a", id)
	if err != nil {
		t.Fatal(err)
	}
	return p, found
}

func TestIntegrationSync_IntentsKeepTheAPIsChangeUntilSettled(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Store(t).Sync()
	cancel, move, other := intentAt("i-1", "a-1", ehr.StatusCancelled, 9), intentAt("i-2", "a-1", ehr.StatusBooked, 10), intentAt("i-3", "a-2", ehr.StatusBooked, 11)
	intend(t, s, "clinic-a", time.Minute, cancel, move, other)
	intend(t, s, "clinic-b", time.Minute, intentAt("i-1", "a-1", ehr.StatusBooked, 12)) // another system's
	if err := s.Intend(ctx, "clinic-a", cancel, time.Minute); err == nil {
		t.Fatal("an intent recorded twice")
	}
	got, err := s.Pending(ctx, "clinic-a", []string{"a-1", "missing"})
	if err != nil || len(got) != 1 || !slices.Equal(got["a-1"], []ehr.PendingChange{cancel, move}) {
		t.Fatalf("pending %+v, %v", got, err)
	}
	if err := s.Defer(ctx, "clinic-a", "i-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Pending(ctx, "clinic-a", []string{"a-1"}); !slices.Equal(got["a-1"], []ehr.PendingChange{move}) {
		t.Fatalf("pending after a deferral %+v", got)
	}
	want := cancel
	want.Deferred = true
	if p, found := settle(t, s, "i-1"); !found || p != want {
		t.Fatalf("settled %+v, %v; want %+v", p, found, want)
	}
	if _, found := settle(t, s, "i-1"); found {
		t.Fatal("settled twice")
	}
	// A failed call withdraws its intent, unless the poller deferred to it.
	if err := s.Defer(ctx, "clinic-a", "i-3"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"i-2", "i-3"} {
		if err := s.Withdraw(ctx, "clinic-a", id); err != nil {
			t.Fatal(err)
		}
	}
	if _, found := settle(t, s, "i-2"); found {
		t.Fatal("a withdrawn intent stayed")
	}
	if p, found := settle(t, s, "i-3"); !found || !p.Deferred {
		t.Fatalf("a deferred intent was withdrawn: %+v, %v", p, found)
	}
	if p, found, err := s.Settle(ctx, "clinic-b", "i-1"); err != nil || !found || p.Status != ehr.StatusBooked {
		t.Fatalf("the other system's intent: %+v, %v, %v", p, found, err)
	}
	if got, err := s.Pending(ctx, "clinic-a", nil); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v, %v", got, err)
	}
}

func TestIntegrationSync_ExpiredIntentsLapseToThePoller(t *testing.T) {
	ctx := context.Background()
	s := pgtest.Store(t).Sync()
	first, deferred, running := intentAt("i-1", "a-1", ehr.StatusCancelled, 9), intentAt("i-2", "a-2", ehr.StatusBooked, 10), intentAt("i-3", "a-3", ehr.StatusBooked, 11)
	intend(t, s, "clinic-a", 0, first) // expired at once
	intend(t, s, "clinic-a", 0, deferred)
	intend(t, s, "clinic-a", time.Minute, running)
	if err := s.Defer(ctx, "clinic-a", "i-2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Pending(ctx, "clinic-a", []string{"a-1", "a-2", "a-3"}); len(got) != 1 || len(got["a-3"]) != 1 {
		t.Fatalf("pending %+v: want the running intent alone", got)
	}
	if got, err := s.Lapse(ctx, "clinic-a", time.Hour, 1); err != nil || len(got) != 1 || got[0].ID != "i-1" {
		t.Fatalf("lapse max 1: %+v, %v", got, err)
	}
	got, err := s.Lapse(ctx, "clinic-a", time.Hour, 10)
	deferred.Deferred, deferred.Lapsed = true, true
	if err != nil || !slices.Equal(got, []ehr.PendingChange{deferred}) {
		t.Fatalf("lapse %+v, %v; want %+v", got, err, deferred)
	}
	if got, _ := s.Lapse(ctx, "clinic-a", time.Hour, 10); len(got) != 0 {
		t.Fatalf("lapsed again: %+v", got)
	}
	// The API path settling a lapsed intent learns it; lapsed intents are
	// kept for keep after they expired.
	if p, found := settle(t, s, "i-1"); !found || !p.Lapsed {
		t.Fatalf("settled %+v, %v", p, found)
	}
	if _, err := s.Lapse(ctx, "clinic-a", 0, 10); err != nil {
		t.Fatal(err)
	}
	if _, found := settle(t, s, "i-2"); found {
		t.Fatal("a lapsed intent outlived its retention")
	}
	if p, found := settle(t, s, "i-3"); !found || p.Lapsed {
		t.Fatalf("the running intent: %+v, %v", p, found)
	}
}

// openTx runs fn in an EHR transaction in the background and returns once
// fn has run, the transaction still open; commit ends it.
func openTx(t *testing.T, db *postgres.Store, fn func(ctx context.Context, r ehr.Repos) error) (commit func() error) {
	t.Helper()
	ran, release, done := make(chan error, 1), make(chan struct{}), make(chan error, 1)
	go func() {
		done <- db.EHRTx().WithinTx(context.Background(), func(ctx context.Context, r ehr.Repos) error {
			err := fn(ctx, r)
			ran <- err
			if err != nil {
				return err
			}
			<-release
			return nil
		})
	}()
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	return func() error {
		close(release)
		return <-done
	}
}

// waitForLock waits until a statement of db waits for a lock.
func waitForLock(t *testing.T, db *postgres.Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count(t, db, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("nothing waited for the intent's lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// The row lock on an intent orders the poller's transaction and the API
// path's: whichever comes second sees what the first did.
func TestIntegrationSync_TheIntentsLockOrdersThePollerAndTheAPIPath(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	s := db.Sync()
	settleIn := func(id string) (p ehr.PendingChange, found bool, err error) {
		err = db.EHRTx().WithinTx(ctx, func(ctx context.Context, r ehr.Repos) error {
			p, found, err = r.Sync.Settle(ctx, "clinic-a", id)
			return err
		})
		return p, found, err
	}
	// The API path settles first: the poller's read waits, then finds
	// nothing.
	intend(t, s, "clinic-a", time.Minute, intentAt("i-1", "a-1", ehr.StatusCancelled, 9))
	commit := openTx(t, db, func(ctx context.Context, r ehr.Repos) error {
		_, _, err := r.Sync.Settle(ctx, "clinic-a", "i-1")
		return err
	})
	var pending map[string][]ehr.PendingChange
	read := make(chan error, 1)
	go func() {
		read <- db.EHRTx().WithinTx(ctx, func(ctx context.Context, r ehr.Repos) (err error) {
			pending, err = r.Sync.Pending(ctx, "clinic-a", []string{"a-1"})
			return err
		})
	}()
	waitForLock(t, db)
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-read; err != nil || len(pending) != 0 {
		t.Fatalf("the poller read %+v, %v after the API path settled", pending, err)
	}
	// The poller defers, or takes over a lapsed intent, first: the API
	// path's settling waits, then learns it.
	for _, step := range []struct {
		lease time.Duration
		fn    func(ctx context.Context, r ehr.Repos) error
		want  func(ehr.PendingChange) bool
	}{
		{time.Minute, func(ctx context.Context, r ehr.Repos) error {
			if _, err := r.Sync.Pending(ctx, "clinic-a", []string{"a-2"}); err != nil {
				return err
			}
			return r.Sync.Defer(ctx, "clinic-a", "i-2")
		}, func(p ehr.PendingChange) bool { return p.Deferred && !p.Lapsed }},
		{0, func(ctx context.Context, r ehr.Repos) error {
			_, err := r.Sync.Lapse(ctx, "clinic-a", time.Hour, 10)
			return err
		}, func(p ehr.PendingChange) bool { return p.Lapsed }},
	} {
		intend(t, s, "clinic-a", step.lease, intentAt("i-2", "a-2", ehr.StatusCancelled, 9))
		commit := openTx(t, db, step.fn)
		type settled struct {
			p     ehr.PendingChange
			found bool
			err   error
		}
		out := make(chan settled, 1)
		go func() {
			p, found, err := settleIn("i-2")
			out <- settled{p, found, err}
		}()
		waitForLock(t, db)
		if err := commit(); err != nil {
			t.Fatal(err)
		}
		if got := <-out; got.err != nil || !got.found || !step.want(got.p) {
			t.Fatalf("lease %v: the API path settled %+v", step.lease, got)
		}
	}
}
