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

func TestIntegrationSync_BookedReadsTheBookingLog(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	for _, b := range []ehr.Booking{{Subject: "ana", Business: "biz-1", AppointmentID: "a-1"},
		{Subject: "bob", Business: "biz-1", AppointmentID: "a-1"}, {Subject: "ana", Business: "biz-2", AppointmentID: "a-1"},
		{Subject: "ana", AppointmentID: "a-2"}} {
		if _, err := db.Bookings().Record(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.Sync().Booked(ctx, []string{"a-1", "a-2", "a-3"})
	want := map[string][]string{"a-1": {"biz-1", "biz-2"}, "a-2": {""}}
	if err != nil || len(got) != len(want) || !slices.Equal(got["a-1"], want["a-1"]) || !slices.Equal(got["a-2"], want["a-2"]) {
		t.Fatalf("booked %v, %v; want %v", got, err, want)
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
