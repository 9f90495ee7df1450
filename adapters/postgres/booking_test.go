package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

// at is 2030-03-04 at hh:mm UTC.
func at(hh, mm int) time.Time { return time.Date(2030, 3, 4, hh, mm, 0, 0, time.UTC) }

func bookHold(id, agent string, from, to time.Time) ehr.Hold {
	return ehr.Hold{ID: id, Kind: ehr.HoldBook, AgentID: agent, Start: from, End: to, Subject: "ana"}
}

func TestIntegrationHolds_OverlapOfOneAgentIsAgentBusy(t *testing.T) {
	ctx := context.Background()
	holds := pgtest.Store(t).Holds()
	if err := holds.Take(ctx, bookHold(core.NewUUID(), "dr-1", at(9, 0), at(10, 0)), time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		agent    string
		from, to time.Time
		busy     bool
	}{
		{"dr-1", at(9, 30), at(10, 30), true},
		{"dr-1", at(8, 0), at(11, 0), true},
		{"dr-1", at(10, 0), at(10, 30), false}, // adjacent: [9:00, 10:00) and [10:00, 10:30)
		{"dr-1", at(8, 30), at(9, 0), false},
		{"dr-2", at(9, 0), at(10, 0), false}, // another agent
	} {
		err := holds.Take(ctx, bookHold(core.NewUUID(), tt.agent, tt.from, tt.to), time.Minute)
		if tt.busy != errors.Is(err, ehr.ErrAgentBusy) || (!tt.busy && err != nil) {
			t.Errorf("%s %s–%s: %v", tt.agent, tt.from.Format("15:04"), tt.to.Format("15:04"), err)
		}
	}
}

func TestIntegrationHolds_ConcurrentOverlappingTakesGiveOne(t *testing.T) {
	ctx := context.Background()
	holds := pgtest.Store(t).Holds()
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = holds.Take(ctx, bookHold(core.NewUUID(), "dr-1", at(9, i), at(9, 30+i)), time.Minute)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ehr.ErrAgentBusy):
			t.Errorf("take: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d overlapping holds taken", ok, n)
	}
}

func TestIntegrationHolds_ReleaseUnknownResumeDue(t *testing.T) {
	ctx := context.Background()
	holds := pgtest.Store(t).Holds()
	keyed := bookHold(core.NewUUID(), "dr-1", at(9, 0), at(9, 30))
	keyed.IdempotencyKey = "k1"
	if err := holds.Take(ctx, keyed, time.Hour); err != nil {
		t.Fatal(err)
	}
	again := bookHold(core.NewUUID(), "dr-2", at(9, 0), at(9, 30))
	again.IdempotencyKey = "k1"
	if err := holds.Take(ctx, again, time.Hour); !errors.Is(err, ehr.ErrIdempotencyInProgress) {
		t.Fatalf("a second hold of one key: %v", err)
	}
	// Leased and calling: neither a repeat nor the reconciler takes it.
	if _, found, err := holds.Resume(ctx, "ana", "k1", time.Hour); err != nil || found {
		t.Fatalf("resume while calling: %v %v", found, err)
	}
	if due, err := holds.Due(ctx, 10, time.Hour); err != nil || len(due) != 0 {
		t.Fatalf("due while calling: %v %v", due, err)
	}
	// Unknown: a repeat resumes it at once, once.
	if err := holds.Unknown(ctx, keyed.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	h, found, err := holds.Resume(ctx, "ana", "k1", time.Hour)
	if err != nil || !found || h.ID != keyed.ID || h.AgentID != "dr-1" || !h.Start.Equal(at(9, 0)) || !h.End.Equal(at(9, 30)) ||
		h.IdempotencyKey != "k1" || h.Kind != ehr.HoldBook || h.Attempts != 1 {
		t.Fatalf("resume: %+v %v %v", h, found, err)
	}
	if _, found, _ := holds.Resume(ctx, "ana", "k1", time.Hour); found {
		t.Fatal("resumed twice")
	}
	// Due: an unknown one after its settle time, and one whose lease ran
	// out (lease 0: its instance is taken to have died at once).
	if err := holds.Unknown(ctx, keyed.ID, 0); err != nil {
		t.Fatal(err)
	}
	dead := bookHold(core.NewUUID(), "dr-3", at(9, 0), at(9, 30))
	if err := holds.Take(ctx, dead, 0); err != nil {
		t.Fatal(err)
	}
	later := bookHold(core.NewUUID(), "dr-4", at(9, 0), at(9, 30))
	if err := holds.Take(ctx, later, time.Hour); err != nil {
		t.Fatal(err)
	}
	due, err := holds.Due(ctx, 10, time.Hour)
	if err != nil || len(due) != 2 {
		t.Fatalf("due: %+v %v", due, err)
	}
	ids := []string{due[0].ID, due[1].ID}
	if !slices.Contains(ids, keyed.ID) || !slices.Contains(ids, dead.ID) {
		t.Fatalf("due %v, want %s and %s", ids, keyed.ID, dead.ID)
	}
	if due, _ := holds.Due(ctx, 10, time.Hour); len(due) != 0 {
		t.Fatalf("due again while leased: %+v", due)
	}
	if err := holds.Release(ctx, dead.ID); err != nil {
		t.Fatal(err)
	}
	if err := holds.Take(ctx, bookHold(core.NewUUID(), "dr-3", at(9, 0), at(9, 30)), time.Minute); err != nil {
		t.Fatalf("the time of a released hold: %v", err)
	}
}

func TestIntegrationHolds_TwoReconcilersNeverTakeTheSameHold(t *testing.T) {
	ctx := context.Background()
	holds := pgtest.Store(t).Holds()
	const n = 60
	for i := range n {
		if err := holds.Take(ctx, bookHold(core.NewUUID(), fmt.Sprint("dr-", i), at(9, 0), at(9, 30)), 0); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				due, err := holds.Due(ctx, 7, time.Hour)
				if err != nil {
					t.Error(err)
					return
				}
				if len(due) == 0 {
					return
				}
				mu.Lock()
				for _, h := range due {
					seen[h.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d holds claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("hold %s claimed %d times", id, c)
		}
	}
}

func TestIntegrationHolds_ASubjectsFutureAppointmentsAreCounted(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	holds, bookings := db.Holds(), db.Bookings()
	future := time.Now().Add(48 * time.Hour)
	for i, start := range []time.Time{future, future.Add(time.Hour), time.Now().Add(-48 * time.Hour)} {
		if _, err := bookings.Record(ctx, ehr.Booking{Subject: "pat", AppointmentID: fmt.Sprint("a-", i), Start: start}); err != nil {
			t.Fatal(err)
		}
	}
	h := func(agent string) ehr.Hold {
		return ehr.Hold{ID: core.NewUUID(), Kind: ehr.HoldBook, AgentID: agent, Start: future, End: future.Add(30 * time.Minute), Subject: "pat", MaxFuture: 3}
	}
	// Two future bookings (the past one does not count), one hold: 3.
	if err := holds.Take(ctx, h("dr-1"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := holds.Take(ctx, h("dr-2"), time.Minute); !errors.Is(err, ehr.ErrAppointmentLimit) || core.KindOf(err) != core.KindConflict {
		t.Fatalf("the fourth: %v", err)
	}
	// A cancelled booking no longer counts.
	if err := bookings.Changed(ctx, "", "", "a-0", future, true); err != nil {
		t.Fatal(err)
	}
	if err := holds.Take(ctx, h("dr-2"), time.Minute); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	// Another subject is not counted with pat.
	other := h("dr-3")
	other.Subject = "someone"
	if err := holds.Take(ctx, other, time.Minute); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationBookings_RecordRemovesTheHoldAndChangedMovesIt(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	holds, bookings := db.Holds(), db.Bookings()
	hold := bookHold(core.NewUUID(), "dr-1", at(9, 0), at(9, 30))
	if err := holds.Take(ctx, hold, time.Hour); err != nil {
		t.Fatal(err)
	}
	if recorded, err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1", Start: at(9, 0), HoldID: hold.ID}); err != nil || !recorded {
		t.Fatal(recorded, err)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM booking_holds`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("holds after the record: %d %v", n, err)
	}
	if recorded, err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1", Start: at(9, 0)}); err != nil || recorded {
		t.Fatalf("recorded again: %v %v", recorded, err)
	}
	if err := bookings.Changed(ctx, "", "", "a-1", at(11, 0), false); err != nil {
		t.Fatal(err)
	}
	var start time.Time
	var cancelled bool
	if err := db.Pool().QueryRow(ctx, `SELECT start_at, cancelled FROM appointment_bookings WHERE appointment_id = 'a-1'`).Scan(&start, &cancelled); err != nil ||
		!start.Equal(at(11, 0)) || cancelled {
		t.Fatalf("after the move: %s %v %v", start, cancelled, err)
	}
}

func TestIntegrationNew_IgnoresTheObsoleteLockParameters(t *testing.T) {
	url := pgtest.New(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	db, err := postgres.New(context.Background(), url+sep+"pool_max_lock_conns=4&pool_lock_wait=5s")
	if err != nil {
		t.Fatalf("a URL an earlier version started with: %v", err)
	}
	db.Close()
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
	if err := idem.Complete(ctx, "alice", "k1", ehr.Outcome{AppointmentID: "a-1", Status: "booked"}); err != nil {
		t.Fatal(err)
	}
	out, done, err := idem.Claim(ctx, "alice", "k1", []string{"fp-a"})
	if err != nil || !done || out != (ehr.Outcome{AppointmentID: "a-1", Status: "booked"}) {
		t.Fatalf("replay: %+v %v %v", out, done, err)
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

func bookedEvent(id string) core.Event {
	return core.AppointmentEvent(core.AppointmentBooked, core.OriginAPI, id, "dr-1", "booked", time.Now(), time.Now().Add(time.Hour), "")
}

func TestIntegrationBookings_RecordedWithTheOutcome(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	idem, bookings := db.Idempotency(), db.Bookings()
	if _, _, err := idem.Claim(ctx, "ana", "k1", []string{"fp"}); err != nil {
		t.Fatal(err)
	}
	if err := ehrTx(db, "k1", ehr.Outcome{AppointmentID: "a-2"}, &ehr.Booking{Subject: "ana", AppointmentID: "a-2"}, bookedEvent("a-2")); err != nil {
		t.Fatal(err)
	}
	if _, err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-1"}); err != nil {
		t.Fatalf("recording again: %v", err)
	}
	if _, err := bookings.Record(ctx, ehr.Booking{Subject: "ben", AppointmentID: "b-1"}); err != nil {
		t.Fatal(err)
	}
	ids, err := bookings.BookedBy(ctx, "ana", "")
	if err != nil || len(ids) != 2 || ids[0].AppointmentID != "a-2" || ids[1].AppointmentID != "a-1" {
		t.Fatalf("ana's bookings, oldest first: %v %v", ids, err)
	}
	for _, tt := range []struct {
		sub, id string
		want    bool
	}{{"ana", "a-1", true}, {"ana", "a-2", true}, {"ana", "b-1", false}, {"ben", "b-1", true}, {"ben", "a-1", false}} {
		if _, ok, err := bookings.IsBookedBy(ctx, tt.sub, "", tt.id); err != nil || ok != tt.want {
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
	if err := ehrTx(db, "k2", ehr.Outcome{AppointmentID: "x"}, &ehr.Booking{Subject: "ana", AppointmentID: "x"}, bookedEvent("x")); err == nil {
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
		if err := idem.Complete(ctx, "ana", k, ehr.Outcome{AppointmentID: "a"}); err != nil {
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
