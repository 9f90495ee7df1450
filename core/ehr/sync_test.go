package ehr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// syncT0 is the EHR's clock at the start of a sync test.
var syncT0 = time.Date(2030, 3, 1, 10, 0, 0, 0, time.UTC)

// ehrAt is the EHR's clock n seconds after syncT0.
func ehrAt(n int) time.Time { return syncT0.Add(time.Duration(n) * time.Second) }

// syncAppt is an appointment of dr-1 on 2030-03-05 at hh:00 for 30 minutes.
func syncAppt(id string, st AppointmentStatus, hh int) Appointment {
	start := time.Date(2030, 3, 5, hh, 0, 0, 0, time.UTC)
	return Appointment{ID: id, AgentID: "dr-1", Start: start, End: start.Add(30 * time.Minute), Status: st, Source: "clinic-a"}
}

// syncRig is a Syncer of system clinic-a over memory.
type syncRig struct {
	feed  *memFeed
	store *memSync
	tx    *syncTx
	s     *Syncer
}

func newSyncRig(cfg SyncConfig) *syncRig {
	r := &syncRig{feed: newMemFeed(), store: newMemSync()}
	r.tx = &syncTx{sync: r.store}
	cfg.System = "clinic-a"
	if cfg.Owner == "" {
		cfg.Owner = "instance-1"
	}
	if cfg.Now == nil {
		cfg.Now = r.store.clock
	}
	r.s = NewSyncer(r.feed, nil, r.store, r.tx, cfg)
	return r
}

// poll runs PollOnce, which must succeed holding the lease.
func (r *syncRig) poll(t *testing.T) PollResult {
	t.Helper()
	res, err := r.s.PollOnce(context.Background())
	if err != nil || !res.Held {
		t.Fatalf("poll: held %v, %v", res.Held, err)
	}
	return res
}

// published lists the events published so far as "type id status origin
// business".
func (r *syncRig) published() []string {
	return describe(r.tx.published())
}

func describe(events []core.Event) []string {
	var out []string
	for _, e := range events {
		d := e.Data.(core.AppointmentData)
		out = append(out, fmt.Sprintf("%s %s %s %s %q", e.Type, d.AppointmentID, d.Status, d.Origin, e.BusinessID))
	}
	return out
}

func TestClassify_TellsEachKindOfChange(t *testing.T) {
	at9 := syncAppt("a", StatusBooked, 9)
	at10 := syncAppt("a", StatusBooked, 10)
	known := AppointmentState{ID: "a", Status: StatusBooked, Start: at9.Start, End: at9.End}
	cancelled := known
	cancelled.Status = StatusCancelled
	for _, tc := range []struct {
		name        string
		k           AppointmentState
		found, ours bool
		status      AppointmentStatus
		start, end  time.Time
		want        []core.EventType
	}{
		{"new", AppointmentState{}, false, false, StatusBooked, at9.Start, at9.End, []core.EventType{core.AppointmentBooked}},
		{"new walk-in already arrived", AppointmentState{}, false, false, StatusCheckedIn, at9.Start, at9.End, []core.EventType{core.AppointmentBooked}},
		{"new and already cancelled", AppointmentState{}, false, false, StatusCancelled, at9.Start, at9.End, []core.EventType{core.AppointmentCancelled}},
		{"new of ours", AppointmentState{}, false, true, StatusBooked, at9.Start, at9.End, nil},
		{"new of ours cancelled", AppointmentState{}, false, true, StatusCancelled, at9.Start, at9.End, nil},
		{"cancelled", known, true, false, StatusCancelled, at9.Start, at9.End, []core.EventType{core.AppointmentCancelled}},
		{"cancelled and moved", known, true, false, StatusCancelled, at10.Start, at10.End, []core.EventType{core.AppointmentCancelled}},
		{"cancelled again", cancelled, true, false, StatusCancelled, at10.Start, at10.End, nil},
		{"moved", known, true, false, StatusBooked, at10.Start, at10.End, []core.EventType{core.AppointmentRescheduled}},
		{"end moved", known, true, false, StatusBooked, at9.Start, at9.End.Add(time.Minute), []core.EventType{core.AppointmentRescheduled}},
		{"checked in", known, true, false, StatusCheckedIn, at9.Start, at9.End, []core.EventType{core.AppointmentStatusChanged}},
		{"no show", known, true, false, StatusNoShow, at9.Start, at9.End, []core.EventType{core.AppointmentStatusChanged}},
		{"back from cancelled", cancelled, true, false, StatusBooked, at9.Start, at9.End, []core.EventType{core.AppointmentStatusChanged}},
		{"moved and confirmed", known, true, false, StatusPending, at10.Start, at10.End, []core.EventType{core.AppointmentRescheduled, core.AppointmentStatusChanged}},
		{"same instant in another zone", known, true, false, StatusBooked, at9.Start.In(time.FixedZone("x", 3600)), at9.End, nil},
		{"nothing that shows", known, true, true, StatusBooked, at9.Start, at9.End, nil},
	} {
		got := classify(tc.k, tc.found, tc.ours, tc.status, tc.start, tc.end)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestSyncer_PublishesEachChangeMadeInTheEHROnce(t *testing.T) {
	r := newSyncRig(SyncConfig{Businesses: []string{"biz-1"}})
	r.poll(t) // the baseline: nothing yet
	a := syncAppt("a-1", StatusBooked, 9)
	steps := []struct {
		change func(*Appointment)
		want   string
	}{
		{func(*Appointment) {}, `appointment.booked a-1 booked ehr "biz-1"`},
		{func(a *Appointment) { a.Status = StatusCheckedIn }, `appointment.status_changed a-1 checked_in ehr "biz-1"`},
		{func(a *Appointment) { a.Start, a.End = a.Start.Add(time.Hour), a.End.Add(time.Hour) }, `appointment.rescheduled a-1 checked_in ehr "biz-1"`},
		{func(a *Appointment) { a.Status = StatusCancelled }, `appointment.cancelled a-1 cancelled ehr "biz-1"`},
	}
	var want []string
	for i, st := range steps {
		st.change(&a)
		r.feed.put(a, ehrAt(10*(i+1)), fmt.Sprint(i+1))
		res := r.poll(t)
		want = append(want, st.want)
		if got := r.published(); !slices.Equal(got, want) {
			t.Fatalf("step %d: published %q, want %q", i, got, want)
		}
		if !res.Watermark.Equal(ehrAt(10 * (i + 1))) {
			t.Fatalf("step %d: watermark %v", i, res.Watermark)
		}
	}
	// Polls that find nothing new (the overlap reads the last version
	// again) publish nothing.
	for range 2 {
		if res := r.poll(t); res.Unchanged != 1 || len(res.Events) != 0 {
			t.Fatalf("repeat poll: %+v", res)
		}
	}
	if got := r.published(); len(got) != len(steps) {
		t.Fatalf("published %q", got)
	}
	if s, _ := r.store.state("clinic-a", "a-1"); s.Status != StatusCancelled || s.Version != "4" || s.Business != "biz-1" {
		t.Fatalf("state %+v", s)
	}
}

func TestSyncer_FirstSweepIsABaselineUnlessHistoryIsAsked(t *testing.T) {
	for _, history := range []bool{false, true} {
		r := newSyncRig(SyncConfig{History: history, Batch: 2})
		for i := range 5 {
			r.feed.put(syncAppt(fmt.Sprint("old-", i), StatusBooked, 9+i), ehrAt(i+1), "1")
		}
		var res PollResult
		res = r.poll(t)
		// Each batch reads the newest change of the one before again.
		if res.Baseline == history || res.Batches != 4 || res.Changes != 8 || res.Unchanged != 3 || !r.store.cursor("clinic-a").Baselined {
			t.Fatalf("history %v: first poll %+v", history, res)
		}
		if got := len(r.published()); (got == 5) != history || (got == 0) == history {
			t.Fatalf("history %v: published %q", history, r.published())
		}
		if _, ok := r.store.state("clinic-a", "old-4"); !ok {
			t.Fatalf("history %v: the baseline remembered nothing", history)
		}
		r.feed.put(syncAppt("new", StatusBooked, 16), ehrAt(60), "1")
		if res := r.poll(t); res.Baseline || res.Events[core.AppointmentBooked] != 1 {
			t.Fatalf("history %v: poll after the baseline %+v", history, res)
		}
	}
}

func TestSyncer_AsksAgainFromTheWatermarkLessTheOverlap(t *testing.T) {
	r := newSyncRig(SyncConfig{Overlap: time.Minute})
	r.poll(t)
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(600), "1")
	r.poll(t)
	// Changes the EHR committed late, stamped before the watermark: within
	// the overlap it is heard, beyond it not (the overlap is the bound).
	r.feed.put(syncAppt("late", StatusBooked, 10), ehrAt(600-50), "1")
	r.feed.put(syncAppt("too-late", StatusBooked, 11), ehrAt(600-70), "1")
	res := r.poll(t)
	calls := r.feed.AppointmentChangesCalls()
	if since := calls[len(calls)-1].Since; !since.Equal(ehrAt(600).Add(-time.Minute)) {
		t.Fatalf("asked since %v", since)
	}
	if res.Events[core.AppointmentBooked] != 1 || res.Unchanged != 1 || !res.Watermark.Equal(ehrAt(600)) {
		t.Fatalf("poll %+v", res)
	}
	if got := r.published(); !slices.Equal(got, []string{`appointment.booked a-1 booked ehr ""`, `appointment.booked late booked ehr ""`}) {
		t.Fatalf("published %q", got)
	}
	if calls[0].Since != (time.Time{}) {
		t.Fatalf("the first poll asked since %v, want the EHR's first", calls[0].Since)
	}
}

// What the booking log holds in this EHR system is Carebridge's own (its
// API path publishes it), whichever businesses the system serves now; the
// same id booked through the service in another EHR system is not: an
// appointment made at this EHR's front desk under that id is heard.
func TestSyncer_CarebridgesOwnAppointmentsPublishNothingHere(t *testing.T) {
	r := newSyncRig(SyncConfig{Businesses: []string{"biz-1", "biz-2"}})
	r.poll(t)
	ref := syncAppt("by-ref", StatusBooked, 9)
	ref.Ref = "hold-1"
	r.feed.put(ref, ehrAt(1), "1")
	r.store.booked["clinic-a/in-log"] = []string{"biz-2"}
	r.feed.put(syncAppt("in-log", StatusBooked, 10), ehrAt(2), "1")
	r.store.booked["clinic-a/moved-on"] = []string{"biz-9"} // a business the system no longer serves
	r.feed.put(syncAppt("moved-on", StatusBooked, 11), ehrAt(3), "1")
	r.store.booked["clinic-b/front-desk"] = []string{"biz-1"} // the same id in another EHR system
	r.feed.put(syncAppt("front-desk", StatusBooked, 12), ehrAt(4), "1")
	r.poll(t)
	if got := r.published(); !slices.Equal(got, []string{`appointment.booked front-desk booked ehr ""`}) {
		t.Fatalf("published %q", got)
	}
	// A later change of one the booking log has belongs to its business.
	r.feed.put(syncAppt("in-log", StatusCheckedIn, 10), ehrAt(5), "2")
	r.feed.put(syncAppt("moved-on", StatusCheckedIn, 11), ehrAt(6), "2")
	r.poll(t)
	got := r.published()
	if want := []string{`appointment.status_changed in-log checked_in ehr "biz-2"`, `appointment.status_changed moved-on checked_in ehr "biz-9"`}; !slices.Equal(got[1:], want) {
		t.Fatalf("published %q, want %q after the first", got, want)
	}
	if calls := r.store.BookedCalls(); len(calls) == 0 || calls[0].System != "clinic-a" {
		t.Fatalf("the booking log was asked %+v; want by this system", calls)
	}
}

func TestSyncer_OnlyTheLeaseHolderPolls(t *testing.T) {
	r := newSyncRig(SyncConfig{Lease: time.Minute})
	other := NewSyncer(r.feed, nil, r.store, r.tx, SyncConfig{System: "clinic-a", Owner: "instance-2", Lease: time.Minute, Now: r.store.clock})
	r.poll(t)
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(1), "1")
	res, err := other.PollOnce(context.Background())
	if err != nil || res.Held || len(r.feed.AppointmentChangesCalls()) != 1 {
		t.Fatalf("the other instance polled: %+v, %v", res, err)
	}
	r.store.now = r.store.now.Add(2 * time.Minute) // the holder died: its lease ran out
	if res, err := other.PollOnce(context.Background()); err != nil || !res.Held || res.Events[core.AppointmentBooked] != 1 {
		t.Fatalf("the lease was not handed over: %+v, %v", res, err)
	}
	if res, _ := r.s.PollOnce(context.Background()); res.Held {
		t.Fatal("the first instance took the lease back while it was held")
	}
}

func TestSyncer_LeaseLostMidPollWritesNothing(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.poll(t)
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(1), "1")
	before := r.store.cursor("clinic-a")
	// Another instance takes the lease over after this one claimed it
	// (this one stalled past its lease) and before its batch commits.
	r.feed.AppointmentChangesFunc = func(ctx context.Context, since time.Time, max int) (ChangeBatch, error) {
		r.store.now = r.store.now.Add(3 * time.Minute)
		if _, held, _ := r.store.claim(ctx, "clinic-a", "instance-2", time.Minute); !held {
			t.Error("the other instance could not take the lease")
		}
		return r.feed.since(ctx, since, max)
	}
	_, err := r.s.PollOnce(context.Background())
	if !errors.Is(err, ErrSyncLeaseLost) {
		t.Fatalf("poll: %v", err)
	}
	if _, ok := r.store.state("clinic-a", "a-1"); ok || len(r.published()) != 0 || r.store.cursor("clinic-a") != before {
		t.Fatalf("a poller without its lease wrote: events %q, cursor %+v", r.published(), r.store.cursor("clinic-a"))
	}
}

func TestSyncer_DrainsABacklogInBoundedBatches(t *testing.T) {
	r := newSyncRig(SyncConfig{Batch: 2, MaxBatches: 2, Overlap: time.Minute})
	r.poll(t)
	for i := range 6 {
		r.feed.put(syncAppt(fmt.Sprint("a-", i), StatusBooked, 9+i), ehrAt(100+i), "1")
	}
	advanced := len(r.store.AdvanceCalls())
	res := r.poll(t)
	// [100 101], then from just before 101: [101 102].
	if res.Batches != 2 || !res.More || res.Events[core.AppointmentBooked] != 3 || !res.Watermark.Equal(ehrAt(102)) {
		t.Fatalf("first poll %+v", res)
	}
	if n := len(r.store.AdvanceCalls()) - advanced; n != 2 {
		t.Fatalf("%d transactions advanced the cursor, want one a batch", n)
	}
	for i := 0; res.More; i++ {
		if i == 5 {
			t.Fatal("the backlog was not drained")
		}
		res = r.poll(t)
	}
	want := []string{}
	for i := range 6 {
		want = append(want, fmt.Sprintf(`appointment.booked a-%d booked ehr ""`, i))
	}
	if got := r.published(); !slices.Equal(got, want) {
		t.Fatalf("published %q", got)
	}
}

func TestSyncer_ChangesOfOneInstantAcrossABatchEndAreAllHeard(t *testing.T) {
	r := newSyncRig(SyncConfig{Batch: 2})
	r.poll(t)
	for i := range 5 { // five changes in one millisecond of the EHR
		r.feed.put(syncAppt(fmt.Sprint("a-", i), StatusBooked, 9+i), ehrAt(100), "1")
	}
	r.feed.put(syncAppt("later", StatusBooked, 15), ehrAt(101), "1")
	res := r.poll(t)
	if res.More || res.Events[core.AppointmentBooked] != 6 || len(r.published()) != 6 {
		t.Fatalf("poll %+v; published %q", res, r.published())
	}
}

func TestSyncer_SkipsUnusableAppointmentsWithoutBlockingTheWatermark(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.poll(t)
	noAgent := syncAppt("no-agent", StatusBooked, 9)
	noAgent.AgentID = ""
	badID := syncAppt("bad id/../x", StatusBooked, 9)
	noTime := syncAppt("no-time", StatusBooked, 9)
	noTime.Start = time.Time{}
	backwards := syncAppt("backwards", StatusBooked, 9)
	backwards.End = backwards.Start
	badStatus := syncAppt("bad-status", "arrived-ish", 9)
	for i, a := range []Appointment{noAgent, badID, noTime, backwards} {
		r.feed.put(a, ehrAt(i+1), "1")
	}
	r.feed.put(syncAppt("good", StatusBooked, 10), ehrAt(5), "1")
	r.feed.put(badStatus, ehrAt(6), "1") // the newest change is unusable
	res := r.poll(t)
	if res.Skipped != 5 || res.Changes != 6 || !res.Watermark.Equal(ehrAt(6)) {
		t.Fatalf("poll %+v", res)
	}
	if got := r.published(); !slices.Equal(got, []string{`appointment.booked good booked ehr ""`}) {
		t.Fatalf("published %q", got)
	}
	if _, ok := r.store.state("clinic-a", "no-agent"); ok {
		t.Fatal("an unusable appointment was remembered")
	}
}

func TestSyncer_EHRFailureKeepsTheWatermark(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.poll(t)
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(1), "1")
	r.poll(t)
	down := &core.Error{Kind: core.KindUnavailable, Code: "ehr_unavailable", Message: "The EHR is unavailable: Ana Lopez"}
	r.feed.err = down
	r.feed.put(syncAppt("a-2", StatusBooked, 10), ehrAt(2), "1")
	if _, err := r.s.PollOnce(context.Background()); !errors.Is(err, down) {
		t.Fatalf("poll: %v", err)
	}
	if c := r.store.cursor("clinic-a"); !c.Watermark.Equal(ehrAt(1)) || r.store.failure["clinic-a"] != "ehr_unavailable" {
		t.Fatalf("cursor %+v, failure %q", c, r.store.failure["clinic-a"])
	}
	r.feed.err = nil // back: it catches up from the watermark
	if res := r.poll(t); res.Events[core.AppointmentBooked] != 1 || r.store.failure["clinic-a"] != "" {
		t.Fatalf("catch-up poll %+v", res)
	}
}

func TestSyncer_FeedWithoutChangesIsReturnedAsIs(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.feed.err = ErrChangesNotSupported
	_, err := r.s.PollOnce(context.Background())
	if err != ErrChangesNotSupported { //nolint:errorlint // returned as is, unwrapped
		t.Fatalf("poll: %v", err)
	}
}

func TestSyncer_FailedWriteRollsTheBatchBack(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	r.poll(t)
	r.feed.put(syncAppt("a-1", StatusBooked, 9), ehrAt(1), "1")
	r.tx.emit = errors.New("outbox down")
	if _, err := r.s.PollOnce(context.Background()); err == nil {
		t.Fatal("a failed outbox was not reported")
	}
	if _, ok := r.store.state("clinic-a", "a-1"); ok || !r.store.cursor("clinic-a").Watermark.IsZero() {
		t.Fatal("a rolled-back batch left its state or watermark")
	}
	r.tx.emit = nil
	if res := r.poll(t); res.Events[core.AppointmentBooked] != 1 {
		t.Fatalf("the retry lost the change: %+v", res)
	}
}
