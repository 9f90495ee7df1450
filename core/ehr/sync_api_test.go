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

// The API paths' side of sync (sync_api.go) against the poller.

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
	if _, err := s.Reschedule(caller("u"), RescheduleRequest{ID: id, Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")}); err != nil {
		t.Fatal(err)
	}
	mirror(id, 2)
	if _, err := s.Cancel(caller("u"), "", id, ""); err != nil {
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
		_, err := r.s.Cancel(caller("u"), "", r.id, "")
		return err
	}},
	{"move", `appointment.rescheduled appt-1 booked api ""`, func(r *apiRig, during func(Appointment, error) (Appointment, error)) error {
		move := r.c.RescheduleAppointmentFunc
		r.c.RescheduleAppointmentFunc = func(ctx context.Context, id string, start, end time.Time) (Appointment, error) {
			return during(move(ctx, id, start, end))
		}
		_, err := r.s.Reschedule(caller("u"), RescheduleRequest{ID: r.id, Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")})
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
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.Business = "biz-1" // acting for biz-1
	if _, err := s.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	st, _ := s.tx.(*memTx).sync.state("test", "appt-1")
	if st.Business != "biz-1" || st.Status != StatusCheckedIn || st.Version != "5" {
		t.Fatalf("state %+v: want the poller's state with the booking's business", st)
	}
}
