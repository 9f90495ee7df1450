package ehr

import (
	"context"
	"errors"
	"fmt"
	"maps"
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

func TestSyncer_CarebridgesOwnAppointmentsPublishNothingHere(t *testing.T) {
	r := newSyncRig(SyncConfig{Businesses: []string{"biz-1", "biz-2"}})
	r.poll(t)
	ref := syncAppt("by-ref", StatusBooked, 9)
	ref.Ref = "hold-1"
	r.feed.put(ref, ehrAt(1), "1")
	r.store.booked["in-log"] = []string{"biz-2"}
	r.feed.put(syncAppt("in-log", StatusBooked, 10), ehrAt(2), "1")
	r.store.booked["other-practice"] = []string{"biz-9"} // not this system's booking
	r.feed.put(syncAppt("other-practice", StatusBooked, 11), ehrAt(3), "1")
	r.poll(t)
	if got := r.published(); !slices.Equal(got, []string{`appointment.booked other-practice booked ehr ""`}) {
		t.Fatalf("published %q", got)
	}
	// A later change of the one the booking log has belongs to its business.
	a := syncAppt("in-log", StatusCheckedIn, 10)
	r.feed.put(a, ehrAt(4), "2")
	r.poll(t)
	if got := r.published(); got[len(got)-1] != `appointment.status_changed in-log checked_in ehr "biz-2"` {
		t.Fatalf("published %q", got)
	}
}

// apiAndSync is the Scheduling of the API paths and a Syncer of its EHR
// (system "test", the calendar's) over one memSync.
func apiAndSync(t *testing.T) (*Scheduling, *calendar, *memFeed, *Syncer) {
	t.Helper()
	c := newCalendar(chicago)
	s := scheduling(c)
	m := s.tx.(*memTx)
	feed := newMemFeed()
	syncer := NewSyncer(feed, nil, m.sync, &syncTx{sync: m.sync}, SyncConfig{System: "test", Owner: "i-1", Now: m.sync.clock})
	if _, err := syncer.PollOnce(context.Background()); err != nil { // the baseline
		t.Fatal(err)
	}
	return s, c, feed, syncer
}

func TestSyncer_ChangesMadeThroughTheAPIAreNotPublishedTwice(t *testing.T) {
	s, c, feed, syncer := apiAndSync(t)
	ctx := context.Background()
	mirror := func(id string, n int) { // the EHR's feed shows the calendar's state
		a, _ := c.GetAppointment(ctx, id)
		feed.put(a, ehrAt(n), fmt.Sprint(n))
	}
	b, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	id := b.Appointment.ID
	mirror(id, 1)
	if _, err := s.Reschedule(caller("u"), id, at("2030-03-04T10:00:00-06:00"), at("2030-03-04T10:30:00-06:00")); err != nil {
		t.Fatal(err)
	}
	mirror(id, 2)
	if _, err := s.Cancel(caller("u"), id, ""); err != nil {
		t.Fatal(err)
	}
	mirror(id, 3)
	res, err := syncer.PollOnce(ctx)
	if err != nil || res.Changes != 1 || len(res.Events) != 0 {
		t.Fatalf("poll: %+v, %v", res, err)
	}
	want := []string{`appointment.booked appt-1 booked api ""`, `appointment.rescheduled appt-1 booked api ""`, `appointment.cancelled appt-1 cancelled api ""`}
	if got := describe(eventsOf(s)); !slices.Equal(got, want) {
		t.Fatalf("API events %q, want %q", got, want)
	}
	if left := s.tx.(*memTx).sync.intents(); len(left) != 0 {
		t.Fatalf("intents left %+v", left)
	}
}

// apiRig is the API paths and a Syncer of their EHR over one memSync, with
// appt-1 booked through the API (9:00 to 9:30 Chicago, 2030-03-04).
type apiRig struct {
	s      *Scheduling
	c      *calendar
	feed   *memFeed
	syncer *Syncer
	db     *memSync
	id     string
}

func newAPIRig(t *testing.T) *apiRig {
	t.Helper()
	s, c, feed, syncer := apiAndSync(t)
	b, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	return &apiRig{s: s, c: c, feed: feed, syncer: syncer, db: s.tx.(*memTx).sync, id: b.Appointment.ID}
}

// poll runs the poller, which must hold the lease, and returns the events
// it published.
func (r *apiRig) poll(t *testing.T) map[core.EventType]int {
	t.Helper()
	res, err := r.syncer.PollOnce(context.Background())
	if err != nil || !res.Held {
		t.Fatalf("poll: held %v, %v", res.Held, err)
	}
	return res.Events
}

// apiChange is a move or a cancellation of appt-1 through the API; during
// replaces the EHR's call: it gets the EHR's own answer and the EHR's
// change (done), and returns what the API path hears.
type apiChange struct {
	name string
	want string // the API path's event
	run  func(r *apiRig, during func(a Appointment, done error) (Appointment, error)) error
}

var apiChanges = []apiChange{
	{"cancel", `appointment.cancelled appt-1 cancelled api ""`, func(r *apiRig, during func(Appointment, error) (Appointment, error)) error {
		cancel := r.c.CancelAppointmentFunc
		r.c.CancelAppointmentFunc = func(ctx context.Context, id, reason string) (Appointment, error) {
			return during(cancel(ctx, id, reason))
		}
		_, err := r.s.Cancel(caller("u"), r.id, "")
		return err
	}},
	{"move", `appointment.rescheduled appt-1 booked api ""`, func(r *apiRig, during func(Appointment, error) (Appointment, error)) error {
		move := r.c.RescheduleAppointmentFunc
		r.c.RescheduleAppointmentFunc = func(ctx context.Context, id string, start, end time.Time) (Appointment, error) {
			return during(move(ctx, id, start, end))
		}
		_, err := r.s.Reschedule(caller("u"), r.id, at("2030-03-04T10:00:00-06:00"), at("2030-03-04T10:30:00-06:00"))
		return err
	}},
}

func TestSyncer_APIChangeThePollerReadsBeforeTheCommitIsTheAPIs(t *testing.T) {
	for _, ch := range apiChanges {
		r := newAPIRig(t)
		err := ch.run(r, func(a Appointment, done error) (Appointment, error) {
			// The poller reads the change between the EHR's answer and
			// the API path's transaction.
			r.feed.put(a, ehrAt(5), "5")
			if ev := r.poll(t); len(ev) != 0 {
				t.Errorf("%s: the poller published %v", ch.name, ev)
			}
			return a, done
		})
		if err != nil {
			t.Fatalf("%s: %v", ch.name, err)
		}
		want := []string{`appointment.booked appt-1 booked api ""`, ch.want}
		if got := describe(eventsOf(r.s)); !slices.Equal(got, want) {
			t.Fatalf("%s: API events %q, want %q", ch.name, got, want)
		}
		if ev := r.poll(t); len(ev) != 0 || len(r.db.intents()) != 0 {
			t.Fatalf("%s: later poll %v, intents left %+v", ch.name, ev, r.db.intents())
		}
		if st, _ := r.db.state("test", r.id); st.Version != "5" {
			t.Fatalf("%s: state %+v, want the poller's", ch.name, st)
		}
	}
}

func TestSyncer_EHRChangeReadWithAnAPIMoveIsTheEHRs(t *testing.T) {
	r := newAPIRig(t)
	var polled map[core.EventType]int
	err := apiChanges[1].run(r, func(a Appointment, done error) (Appointment, error) {
		arrived := a
		arrived.Status = StatusCheckedIn // the front desk, at once
		r.feed.put(arrived, ehrAt(5), "5")
		polled = r.poll(t)
		return a, done
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(polled, map[core.EventType]int{core.AppointmentStatusChanged: 1}) {
		t.Fatalf("the poller published %v, want the check-in alone", polled)
	}
	if got := describe(eventsOf(r.s)); len(got) != 2 || got[1] != apiChanges[1].want {
		t.Fatalf("API events %q", got)
	}
	if ev := r.poll(t); len(ev) != 0 {
		t.Fatalf("later poll %v", ev)
	}
}

func TestSyncer_FailedAPIChangeIsLeftToThePoller(t *testing.T) {
	refused := &core.Error{Kind: core.KindConflict, Code: "refused", Message: "no"}
	for _, ch := range apiChanges {
		// Refused: the EHR changed nothing; nothing is published.
		r := newAPIRig(t)
		if err := ch.run(r, func(Appointment, error) (Appointment, error) { return Appointment{}, refused }); !errors.Is(err, refused) {
			t.Fatalf("%s refused: %v", ch.name, err)
		}
		if ev := r.poll(t); len(ev) != 0 || len(r.db.intents()) != 0 {
			t.Fatalf("%s refused: poll %v, intents %+v", ch.name, ev, r.db.intents())
		}
		// The answer lost after the EHR made the change: the poller
		// reads it later and publishes it, once, as the EHR's.
		r = newAPIRig(t)
		var made Appointment
		err := ch.run(r, func(a Appointment, _ error) (Appointment, error) {
			made = a
			return Appointment{}, errors.New("timeout")
		})
		if err == nil || len(r.db.intents()) != 0 {
			t.Fatalf("%s lost: %v, intents %+v", ch.name, err, r.db.intents())
		}
		r.feed.put(made, ehrAt(5), "5")
		if ev := r.poll(t); len(ev) != 1 || len(r.poll(t)) != 0 || len(eventsOf(r.s)) != 1 {
			t.Fatalf("%s lost: poll %v, API events %q", ch.name, ev, describe(eventsOf(r.s)))
		}
	}
}

func TestSyncer_IntentThePollerDeferredToIsPublishedWhenItLapses(t *testing.T) {
	r := newAPIRig(t)
	err := apiChanges[0].run(r, func(a Appointment, _ error) (Appointment, error) {
		r.feed.put(a, ehrAt(5), "5")
		r.poll(t) // defers to the API path, whose answer is then lost
		return Appointment{}, errors.New("timeout")
	})
	if err == nil {
		t.Fatal("no error")
	}
	if ev := r.poll(t); len(ev) != 0 {
		t.Fatalf("published %v before the intent lapsed", ev)
	}
	r.feed.mu.Lock()
	clear(r.feed.changes) // the change has left the overlap: an idle EHR
	r.feed.mu.Unlock()
	r.db.tick(intentLease)
	if ev := r.poll(t); ev[core.AppointmentCancelled] != 1 || len(ev) != 1 {
		t.Fatalf("lapsed: published %v", ev)
	}
	if ev := r.poll(t); len(ev) != 0 || len(r.db.intents()) != 1 {
		t.Fatalf("after: published %v, intents %+v", ev, r.db.intents())
	}
	r.db.tick(lapsedKeep + time.Second)
	if r.poll(t); len(r.db.intents()) != 0 {
		t.Fatalf("a lapsed intent outlived its retention: %+v", r.db.intents())
	}
	if got := describe(r.syncer.tx.(*syncTx).published()); !slices.Equal(got, []string{`appointment.cancelled appt-1 cancelled ehr ""`}) {
		t.Fatalf("published %q", got)
	}
}

func TestSyncer_APIChangeWhoseCommitFailsIsPublishedWhenItsIntentLapses(t *testing.T) {
	r := newAPIRig(t)
	m := r.s.tx.(*memTx)
	var made Appointment
	err := apiChanges[0].run(r, func(a Appointment, done error) (Appointment, error) {
		made = a
		m.emit = errors.New("outbox down") // the API path's transaction fails
		return a, done
	})
	m.emit = nil
	if err == nil || len(r.db.intents()) != 1 {
		t.Fatalf("cancel: %v, intents %+v", err, r.db.intents())
	}
	r.feed.put(made, ehrAt(5), "5")
	if ev := r.poll(t); len(ev) != 0 {
		t.Fatalf("published %v while the intent runs", ev)
	}
	r.db.tick(intentLease)
	if ev := r.poll(t); ev[core.AppointmentCancelled] != 1 || len(ev) != 1 || len(r.poll(t)) != 0 {
		t.Fatalf("lapsed: published %v", ev)
	}
	if got := describe(eventsOf(r.s)); len(got) != 1 {
		t.Fatalf("API events %q, want the booking alone", got)
	}
}

func TestSyncer_APIPathCommittingAfterItsIntentLapsedPublishesNothing(t *testing.T) {
	for _, deferred := range []bool{true, false} {
		r := newAPIRig(t)
		err := apiChanges[0].run(r, func(a Appointment, done error) (Appointment, error) {
			r.feed.put(a, ehrAt(5), "5")
			if deferred {
				r.poll(t) // sees it while the intent runs
			}
			r.db.tick(intentLease) // the API path stalls past its intent
			if ev := r.poll(t); ev[core.AppointmentCancelled] != 1 {
				t.Errorf("deferred %v: the poller published %v", deferred, ev)
			}
			return a, done
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := describe(eventsOf(r.s)); len(got) != 1 {
			t.Fatalf("deferred %v: API events %q, want the booking alone", deferred, got)
		}
		if ev := r.poll(t); len(ev) != 0 || len(r.db.intents()) != 0 {
			t.Fatalf("deferred %v: later poll %v, intents %+v", deferred, ev, r.db.intents())
		}
	}
}

func TestSyncer_APathWithoutSystemRemembersNothing(t *testing.T) {
	r := Repos{Sync: newMemSync()}
	a := syncAppt("a", StatusCancelled, 9)
	a.Source = ""
	publish, err := rememberChange(context.Background(), r, intent{}, a, "")
	if err != nil || !publish || len(r.Sync.(*memSync).states) != 0 {
		t.Fatalf("publish %v, %v", publish, err)
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

// listing is a Scheduler whose window listing pages over appts and whose
// lookup finds only those of ids in exist.
func listing(appts []Appointment, exist map[string]bool) *SchedulerMock {
	return &SchedulerMock{
		ListAppointmentsFunc: func(_ context.Context, f AppointmentFilter) (Page[Appointment], error) {
			lo := min((f.Page-1)*f.Limit, len(appts))
			hi := min(lo+f.Limit, len(appts))
			return Page[Appointment]{Items: appts[lo:hi], TotalCount: len(appts), Page: f.Page, Limit: f.Limit}, nil
		},
		GetAppointmentFunc: func(_ context.Context, id string) (Appointment, error) {
			if exist[id] {
				return Appointment{ID: id}, nil
			}
			return Appointment{}, ErrAppointmentNotFound
		},
	}
}

func TestSyncerReconcile_PublishesWhatTheEHRDeleted(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	var inEHR []Appointment
	for i := range 150 { // two pages
		a := syncAppt(fmt.Sprint("kept-", i), StatusBooked, 9)
		inEHR = append(inEHR, a)
	}
	remember := func(id string, st AppointmentStatus) {
		a := syncAppt(id, st, 12)
		_ = r.store.remember(context.Background(), "clinic-a", AppointmentState{ID: id, AgentID: a.AgentID, Version: "1",
			Status: st, Start: a.Start, End: a.End, Business: "biz-1"})
	}
	remember("kept-149", StatusBooked)   // on the second page
	remember("deleted", StatusCheckedIn) // gone from the EHR
	remember("moved-away", StatusBooked) // out of the window: the poller's
	remember("was-cancelled", StatusCancelled)
	sch := listing(inEHR, map[string]bool{"moved-away": true})
	r.s.sch = sch
	from, to := time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	res, err := r.s.Reconcile(context.Background(), from, to)
	if err != nil || res.Listed != 150 || res.Checked != 2 || res.Cancelled != 1 || res.Truncated {
		t.Fatalf("reconcile %+v, %v", res, err)
	}
	if got := r.published(); !slices.Equal(got, []string{`appointment.cancelled deleted cancelled ehr "biz-1"`}) {
		t.Fatalf("published %q", got)
	}
	if s, _ := r.store.state("clinic-a", "deleted"); s.Status != StatusCancelled {
		t.Fatalf("state %+v", s)
	}
	if res, err := r.s.Reconcile(context.Background(), from, to); err != nil || res.Cancelled != 0 || len(r.published()) != 1 {
		t.Fatalf("second reconcile %+v, %v", res, err)
	}
}

func TestSyncerReconcile_LeaseLostOrEHRDownWritesNothing(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	a := syncAppt("deleted", StatusBooked, 12)
	_ = r.store.remember(context.Background(), "clinic-a", AppointmentState{ID: a.ID, AgentID: "dr-1", Status: StatusBooked, Start: a.Start, End: a.End})
	from, to := time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	sch := listing(nil, nil)
	r.s.sch = sch
	down := &core.Error{Kind: core.KindBadGateway, Code: "ehr_error", Message: "down"}
	sch.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, down }
	if _, err := r.s.Reconcile(context.Background(), from, to); !errors.Is(err, down) {
		t.Fatalf("reconcile with the EHR down: %v", err)
	}
	sch = listing(nil, nil)
	sch.GetAppointmentFunc = func(ctx context.Context, id string) (Appointment, error) {
		r.store.now = r.store.now.Add(3 * time.Minute)
		_, _, _ = r.store.claim(ctx, "clinic-a", "instance-2", time.Minute)
		return Appointment{}, ErrAppointmentNotFound
	}
	r.s.sch = sch
	if _, err := r.s.Reconcile(context.Background(), from, to); !errors.Is(err, ErrSyncLeaseLost) {
		t.Fatalf("reconcile after losing the lease: %v", err)
	}
	if s, _ := r.store.state("clinic-a", "deleted"); s.Status != StatusBooked || len(r.published()) != 0 {
		t.Fatalf("a reconciler without its lease wrote: %+v, %q", s, r.published())
	}
}

func TestSyncer_OwnBookingThePollerSawFirstGetsItsBusiness(t *testing.T) {
	s, c, feed, syncer := apiAndSync(t)
	create := c.CreateAppointmentFunc
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		booked, err := create(ctx, a)
		checkedIn := booked
		checkedIn.Status = StatusCheckedIn // and checked in at once, before the API path records it
		feed.put(checkedIn, ehrAt(5), "5")
		if res, err := syncer.PollOnce(ctx); err != nil || len(res.Events) != 0 {
			t.Errorf("poll %+v, %v: the poller published Carebridge's own booking", res, err)
		}
		return booked, err
	}
	ctx := context.WithValue(caller("u"), actingKey{}, "biz-1") // acting for biz-1
	if _, err := s.Book(ctx, request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); err != nil {
		t.Fatal(err)
	}
	st, _ := s.tx.(*memTx).sync.state("test", "appt-1")
	if st.Business != "biz-1" || st.Status != StatusCheckedIn || st.Version != "5" {
		t.Fatalf("state %+v: want the poller's state with the booking's business", st)
	}
}
