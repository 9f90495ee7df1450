package ehr

import (
	"context"
	"slices"
	"testing"
	"time"
)

// farFuture is an EHR time no clock vouches for: a record imported with a
// wrong year, a server clock gone wrong.
var farFuture = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

func TestSyncer_BoundIsTheEHRsClockAndNeverFarPastOurs(t *testing.T) {
	ours := nowTest // the rig's clock (SyncConfig.Now)
	r := newSyncRig(SyncConfig{Skew: time.Minute})
	for _, tc := range []struct {
		name     string
		ehrClock time.Time
		want     time.Time
	}{
		{"no clock told: ours plus the skew", time.Time{}, ours.Add(time.Minute)},
		{"an EHR behind us: its Date, to the end of its second", ours.Add(-time.Hour), ours.Add(-time.Hour + time.Second)},
		{"an EHR a little ahead: its Date", ours.Add(10 * time.Second), ours.Add(11 * time.Second)},
		{"an EHR whose clock went wrong: ours plus the skew", farFuture, ours.Add(time.Minute)},
	} {
		if got := r.s.bound(tc.ehrClock); !got.Equal(tc.want) {
			t.Errorf("%s: bound %s, want %s", tc.name, got.Format(time.RFC3339Nano), tc.want.Format(time.RFC3339Nano))
		}
	}
}

// One appointment dated 2099 used to move the watermark to 2099: every
// later change, older by the EHR's clock, was never asked for again.
func TestSyncer_AChangeDatedPastTheEHRsClockDoesNotStopTheFeed(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.feed.setClock(ehrAt(60)) // the EHR's Date at each answer
	r.poll(t)                  // the baseline: nothing yet
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(5), "1")
	r.feed.put(syncAppt("odd", StatusBooked, 10), farFuture, "1")
	res := r.poll(t)
	if res.Ahead != 1 || !res.AheadAt.Equal(farFuture) || !res.Bound.Equal(ehrAt(61)) {
		t.Errorf("poll %+v: want the odd change counted past the bound of the EHR's Date", res)
	}
	if w := r.store.cursor("clinic-a").Watermark; !w.Equal(ehrAt(5)) || !res.Watermark.Equal(w) {
		t.Fatalf("watermark %s (poll says %s), want the newest change within the EHR's clock, %s", w, res.Watermark, ehrAt(5))
	}

	// Later changes keep flowing; the odd one, read again (as a-1 is, in
	// the overlap), is known and not counted again.
	r.feed.setClock(ehrAt(120))
	r.feed.put(syncAppt("a-2", StatusBooked, 11), ehrAt(90), "1")
	res = r.poll(t)
	if res.Ahead != 0 || res.Unchanged != 2 {
		t.Errorf("second poll %+v: want the odd change read again as unchanged, not counted", res)
	}
	want := []string{`appointment.booked a-1 booked ehr ""`, `appointment.booked odd booked ehr ""`, `appointment.booked a-2 booked ehr ""`}
	if got := r.published(); !slices.Equal(got, want) {
		t.Fatalf("published %q, want %q", got, want)
	}
	if w := r.store.cursor("clinic-a").Watermark; !w.Equal(ehrAt(90)) {
		t.Errorf("watermark %s, want %s", w, ehrAt(90))
	}
}

// Without the EHR's clock (a bot), ours plus the skew bounds the
// watermark; an odd change in the baseline moves it no further either.
func TestSyncer_WithoutTheEHRsClockOursPlusTheSkewBoundsTheWatermark(t *testing.T) {
	r := newSyncRig(SyncConfig{Skew: time.Minute})
	r.feed.put(syncAppt("old", StatusBooked, 8), nowTest.Add(-time.Hour), "1")
	r.feed.put(syncAppt("odd", StatusBooked, 9), farFuture, "1")
	res := r.poll(t) // the baseline
	if !res.Baseline || res.Ahead != 1 || !res.Watermark.Equal(nowTest.Add(-time.Hour)) {
		t.Fatalf("baseline %+v", res)
	}
	r.feed.put(syncAppt("skewed", StatusBooked, 10), nowTest.Add(30*time.Second), "1") // an EHR clock 30 s ahead of ours
	r.feed.put(syncAppt("ahead", StatusBooked, 11), nowTest.Add(2*time.Minute), "1")   // past the skew
	res = r.poll(t)
	if res.Ahead != 1 || !res.AheadAt.Equal(nowTest.Add(2*time.Minute)) || !res.Watermark.Equal(nowTest.Add(30*time.Second)) {
		t.Fatalf("poll %+v", res)
	}
	want := []string{`appointment.booked skewed booked ehr ""`, `appointment.booked ahead booked ehr ""`}
	if got := r.published(); !slices.Equal(got, want) {
		t.Fatalf("published %q, want %q", got, want)
	}
	// Once our clock has passed it, the change moves the watermark.
	r.store.tick(2 * time.Minute)
	if res = r.poll(t); res.Ahead != 0 || !res.Watermark.Equal(nowTest.Add(2*time.Minute)) {
		t.Fatalf("poll after our clock passed the change %+v", res)
	}
}

// A watermark already past the bound (moved there before the bound held)
// is set back to the EHR's clock, and the changes after it flow again.
func TestSyncer_AWatermarkAlreadyPastTheClockIsSetBack(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.poll(t)
	if err := r.store.advance(context.Background(), "clinic-a", SyncCursor{Watermark: farFuture, Baselined: true}); err != nil {
		t.Fatal(err)
	}
	r.feed.setClock(ehrAt(60))
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(30), "1")
	res := r.poll(t)
	if !res.Rewound.Equal(farFuture) || !res.Watermark.Equal(ehrAt(61)) || res.Events["appointment.booked"] != 1 {
		t.Fatalf("poll %+v: want the watermark set back to the EHR's clock and the change published", res)
	}
	if w := r.store.cursor("clinic-a").Watermark; !w.Equal(ehrAt(61)) {
		t.Fatalf("stored watermark %s, want %s", w, ehrAt(61))
	}
	if res = r.poll(t); !res.Rewound.IsZero() || len(r.store.RewindCalls()) != 1 {
		t.Fatalf("second poll %+v, %d rewinds: want none more", res, len(r.store.RewindCalls()))
	}
}

func TestSyncLease_IsTheIntervalPlusAMinute(t *testing.T) {
	for interval, want := range map[time.Duration]time.Duration{
		0:                0 + time.Minute,
		time.Second:      61 * time.Second,
		5 * time.Second:  65 * time.Second,
		time.Minute:      2 * time.Minute,
		10 * time.Minute: 11 * time.Minute,
	} {
		if got := SyncLease(interval); got != want {
			t.Errorf("SyncLease(%v) = %v, want %v", interval, got, want)
		}
	}
}

// An instance that dies holding the lease keeps the others off the system
// for the interval plus a minute, not a fixed 2 minutes: the database's
// clock moves, nobody sleeps.
func TestSyncer_ACrashedHoldersSystemIsTakenOverWithinItsLease(t *testing.T) {
	r := newSyncRig(SyncConfig{Interval: 5 * time.Second})
	other := NewSyncer(r.feed, nil, r.store, r.tx, SyncConfig{System: "clinic-a", Owner: "instance-2",
		Interval: 5 * time.Second, Now: r.store.clock})
	r.poll(t) // instance-1 holds the lease, then dies
	if c := r.store.ClaimCalls(); len(c) != 1 || c[0].Lease != 65*time.Second {
		t.Fatalf("claims %+v, want one of 65 s", c)
	}
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(1), "1")
	r.store.tick(64 * time.Second)
	if res, err := other.PollOnce(context.Background()); err != nil || res.Held {
		t.Fatalf("the other instance polled within the lease: %+v, %v", res, err)
	}
	r.store.tick(2 * time.Second)
	res, err := other.PollOnce(context.Background())
	if err != nil || !res.Held || res.Events["appointment.booked"] != 1 {
		t.Fatalf("the other instance did not take over once the lease ran out: %+v, %v", res, err)
	}
}
