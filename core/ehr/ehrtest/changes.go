package ehrtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The change feed contract (ehr.ChangeFeed), in the manner of
// TestScheduler. An adapter's test calls TestChangeFeed with a function
// that returns a backend for each subtest, with ways to change
// appointments directly in the EHR, as its own screens do:
//
//	ehrtest.TestChangeFeed(t, func(t *testing.T) ehrtest.ChangeFeedBackend {
//		srv := wsbottest.Start(t)
//		c := newClient(t, srv.URL())
//		return ehrtest.ChangeFeedBackend{Feed: c, Scheduler: c, AddAgent: …, Book: …, Cancel: …, Move: …, SetStatus: …}
//	})
//
// Each subtest reads the feed as a poller does — from the UpdatedAt of an
// appointment it booked, then from the last change read — and looks only
// at the appointments it made, so a backend that shares its server with
// other subtests passes as well as an empty one. What the suite pins down,
// beyond the port's comment:
//   - each change made directly in the EHR (a booking, a move, a status
//     change, a cancellation) comes in the next read, once, in its new
//     state, with UpdatedAt after since and a Version that appointment
//     never had before; an appointment changed before since does not come;
//   - changes come oldest first by UpdatedAt, and several changes read
//     together come in the order they were made;
//   - reading with a small max pages: every call returns at most max (more
//     only when more than max changes share one instant), more is true
//     until the last call, and every change comes exactly once;
//   - an appointment booked through the Scheduler (CreateAppointment with
//     a Ref) carries that Ref in the feed; one booked directly has none;
//   - the EHR's clock, when the feed tells it (ChangeBatch.Clock), is not
//     before the changes of its answer, to its second.

// ChangeFeedBackend is one ChangeFeed under test with ways to change its
// appointments directly in the EHR.
type ChangeFeedBackend struct {
	Feed      ehr.ChangeFeed
	Scheduler ehr.Scheduler // the same EHR: CreateAppointment and GetAppointment
	// AddAgent creates an agent as Backend.AddAgent does.
	AddAgent func(t *testing.T, a ehr.Agent, free []ehr.Period) string
	// Book creates a booked appointment directly in the EHR (not through
	// the Scheduler: no Ref) with a's agent, times, reason, location and
	// patient, and returns its id.
	Book func(t *testing.T, a ehr.Appointment) string
	// Cancel, Move and SetStatus change appointment id directly in the
	// EHR: cancelled, moved to [start, end), given status st.
	Cancel    func(t *testing.T, id string)
	Move      func(t *testing.T, id string, start, end time.Time)
	SetStatus func(t *testing.T, id string, st ehr.AppointmentStatus)
}

// TestChangeFeed runs the ChangeFeed contract against backends made by
// newBackend, which is called once for every subtest.
func TestChangeFeed(t *testing.T, newBackend func(t *testing.T) ChangeFeedBackend) {
	t.Helper()
	s := feedSuite{newBackend: newBackend}
	t.Run("EachDirectChangeComesOnceWithANewVersion", s.eachChange)
	t.Run("ChangesComeOldestFirst", s.order)
	t.Run("PagesPastMax", s.paging)
	t.Run("BookingsOfCarebridgeCarryTheirRef", s.ref)
}

type feedSuite struct {
	newBackend func(t *testing.T) ChangeFeedBackend
}

// feedEnv is one subtest's backend, an agent free all of its day, and
// the feed's position.
type feedEnv struct {
	t     *testing.T
	b     ChangeFeedBackend
	ctx   context.Context
	tag   string
	day   time.Time
	agent string
	since time.Time
	mine  map[string]bool // the appointments the subtest made
}

func (s feedSuite) setup(t *testing.T) *feedEnv {
	t.Helper()
	b := s.newBackend(t)
	if b.Feed == nil || b.Scheduler == nil || b.AddAgent == nil || b.Book == nil || b.Cancel == nil || b.Move == nil || b.SetStatus == nil {
		t.Fatal("ehrtest: the change feed backend needs every field")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	e := &feedEnv{t: t, b: b, ctx: ctx, tag: randomTag(), mine: map[string]bool{},
		day: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 14+rand.IntN(300))}
	e.agent = b.AddAgent(t, ehr.Agent{FirstName: "Feed", LastName: "Agent" + e.tag, Name: "Feed Agent" + e.tag,
		Specialty: "feed-" + e.tag, Email: "feed." + e.tag + "@clinic.example", Timezone: "UTC"},
		[]ehr.Period{{Start: e.day, End: e.day.Add(24 * time.Hour)}})
	return e
}

// at is the env's day at hour:minute, UTC.
func (e *feedEnv) at(hour, minute int) time.Time {
	return e.day.Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

func (e *feedEnv) appointment(hour, minute int) ehr.Appointment {
	return ehr.Appointment{AgentID: e.agent, Start: e.at(hour, minute), End: e.at(hour, minute+30),
		Reason: "Front desk booking", Patient: ehr.PatientContact{FirstName: "Ana", LastName: "Lopez" + e.tag,
			DateOfBirth: "1980-02-01", Email: "ana." + e.tag + "@patient.example"}}
}

// book books directly in the EHR and remembers the id.
func (e *feedEnv) book(hour, minute int) string {
	e.t.Helper()
	id := e.b.Book(e.t, e.appointment(hour, minute))
	if id == "" {
		e.t.Fatal("Book returned an empty id")
	}
	e.mine[id] = true
	return id
}

// start books the first appointment and sets since to its UpdatedAt as
// the EHR reports it.
func (e *feedEnv) start() string {
	e.t.Helper()
	id := e.book(8, 0)
	a, err := e.b.Scheduler.GetAppointment(e.ctx, id)
	if err != nil {
		e.t.Fatalf("GetAppointment(%s): %v", id, err)
	}
	if a.UpdatedAt.IsZero() {
		e.t.Fatalf("appointment %s has no UpdatedAt", id)
	}
	e.since = a.UpdatedAt
	return id
}

// read reads the feed from since to its end, max a call, checks every
// call's bounds and order, moves since to the last change read, and
// returns the changes of the subtest's appointments.
func (e *feedEnv) read(max int) []ehr.AppointmentChange {
	e.t.Helper()
	var mine []ehr.AppointmentChange
	for call := 0; ; call++ {
		if call > 1000 {
			e.t.Fatal("the feed still reports more after 1000 calls")
		}
		b, err := e.b.Feed.AppointmentChanges(e.ctx, e.since, max)
		if err != nil {
			e.t.Fatalf("AppointmentChanges(%s, %d): %v", e.since.Format(time.RFC3339Nano), max, err)
		}
		e.checkBatch(b, max)
		cs, more := b.Changes, b.More
		for _, c := range cs {
			if e.mine[c.Appointment.ID] {
				mine = append(mine, c)
			}
		}
		if len(cs) > 0 {
			e.since = cs[len(cs)-1].Appointment.UpdatedAt
		}
		if !more {
			return mine
		}
		if len(cs) == 0 {
			e.t.Fatal("AppointmentChanges returned nothing but more")
		}
	}
}

// checkBatch checks one call's answer: at most max (unless they share one
// instant), each after since, oldest first, each with a version; and the
// EHR's clock, when told, is this machine's (the backends run here) and
// not before any change it answers (within the second a Date tells).
func (e *feedEnv) checkBatch(b ehr.ChangeBatch, max int) {
	e.t.Helper()
	cs := b.Changes
	if !b.Clock.IsZero() {
		if off := time.Since(b.Clock); off < -time.Minute || off > time.Minute {
			e.t.Errorf("the EHR's clock %s is %v off this machine's", b.Clock.Format(time.RFC3339Nano), off)
		}
		for _, c := range cs {
			if c.Appointment.UpdatedAt.After(b.Clock.Add(time.Second)) {
				e.t.Errorf("change of %s at %s is after the EHR's clock %s", c.Appointment.ID,
					c.Appointment.UpdatedAt.Format(time.RFC3339Nano), b.Clock.Format(time.RFC3339Nano))
			}
		}
	}
	if len(cs) > max && !cs[0].Appointment.UpdatedAt.Equal(cs[len(cs)-1].Appointment.UpdatedAt) {
		e.t.Errorf("AppointmentChanges(max %d) returned %d changes of different instants", max, len(cs))
	}
	for i, c := range cs {
		switch {
		case !c.Appointment.UpdatedAt.After(e.since):
			e.t.Errorf("change of %s at %s is not after since %s", c.Appointment.ID,
				c.Appointment.UpdatedAt.Format(time.RFC3339Nano), e.since.Format(time.RFC3339Nano))
		case i > 0 && c.Appointment.UpdatedAt.Before(cs[i-1].Appointment.UpdatedAt):
			e.t.Errorf("change %d (%s) is older than the one before it", i, c.Appointment.ID)
		case c.Version == "":
			e.t.Errorf("change of %s has no version", c.Appointment.ID)
		}
	}
}

func (s feedSuite) eachChange(t *testing.T) {
	e := s.setup(t)
	a := e.start()
	if got := e.read(100); len(got) != 0 {
		t.Fatalf("read from the booking's own UpdatedAt: %s; want nothing (it is not after since)", describe(got))
	}
	versions := map[string][]string{}
	expect := func(what, id string, check func(a ehr.Appointment) bool) {
		t.Helper()
		got := e.read(100)
		if len(got) != 1 || got[0].Appointment.ID != id {
			t.Fatalf("%s: read %s; want one change of %s", what, describe(got), id)
		}
		c := got[0]
		if c.Appointment.AgentID != e.agent || !check(c.Appointment) {
			t.Errorf("%s: the change reads %+v", what, c.Appointment)
		}
		if slices.Contains(versions[id], c.Version) {
			t.Errorf("%s: version %q of %s came before", what, c.Version, id)
		}
		versions[id] = append(versions[id], c.Version)
	}
	b := e.book(9, 0)
	expect("a booking", b, func(x ehr.Appointment) bool {
		return x.Status == ehr.StatusBooked && x.Start.Equal(e.at(9, 0)) && x.End.Equal(e.at(9, 30)) && x.Ref == ""
	})
	e.b.Move(t, a, e.at(10, 0), e.at(10, 45))
	expect("a move", a, func(x ehr.Appointment) bool {
		return x.Status == ehr.StatusBooked && x.Start.Equal(e.at(10, 0)) && x.End.Equal(e.at(10, 45))
	})
	e.b.SetStatus(t, b, ehr.StatusCheckedIn)
	expect("a check-in", b, func(x ehr.Appointment) bool {
		return x.Status == ehr.StatusCheckedIn && x.Start.Equal(e.at(9, 0))
	})
	e.b.Cancel(t, a)
	expect("a cancellation", a, func(x ehr.Appointment) bool {
		return x.Status == ehr.StatusCancelled && x.Start.Equal(e.at(10, 0))
	})
	if got := e.read(100); len(got) != 0 {
		t.Errorf("read again without a change: %s; want nothing", describe(got))
	}
}

func (s feedSuite) order(t *testing.T) {
	e := s.setup(t)
	a := e.start()
	b := e.book(9, 0)
	e.b.SetStatus(t, a, ehr.StatusCheckedIn)
	c := e.book(11, 0)
	e.b.Move(t, b, e.at(12, 0), e.at(12, 30))
	got := e.read(100)
	var ids []string
	for _, x := range got {
		ids = append(ids, x.Appointment.ID)
	}
	// b's booking and its move are one change now: the feed tells the
	// current state, at the time of its last change.
	if want := []string{a, c, b}; !slices.Equal(ids, want) {
		t.Fatalf("read %s; want the changes of %v in that order", describe(got), want)
	}
	if got[0].Appointment.Status != ehr.StatusCheckedIn || !got[2].Appointment.Start.Equal(e.at(12, 0)) {
		t.Errorf("read %s; want a checked in and b moved to 12:00", describe(got))
	}
}

func (s feedSuite) paging(t *testing.T) {
	e := s.setup(t)
	e.start()
	var want []string
	for i := range 5 {
		want = append(want, e.book(9+i, 0))
	}
	const limit = 2
	var got []string
	calls := 0
	for {
		b, err := e.b.Feed.AppointmentChanges(e.ctx, e.since, limit)
		if err != nil {
			t.Fatalf("AppointmentChanges(max %d): %v", limit, err)
		}
		calls++
		e.checkBatch(b, limit)
		cs, more := b.Changes, b.More
		for _, c := range cs {
			if e.mine[c.Appointment.ID] {
				got = append(got, c.Appointment.ID)
			}
		}
		if len(cs) > 0 {
			e.since = cs[len(cs)-1].Appointment.UpdatedAt
		}
		if !more {
			break
		}
		if len(cs) == 0 || calls > 1000 {
			t.Fatalf("call %d returned %d changes and more", calls, len(cs))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged with max %d: %v; want each of %v once, in order", limit, got, want)
	}
	if calls < 3 {
		t.Errorf("5 changes came in %d calls of at most %d", calls, limit)
	}
}

func (s feedSuite) ref(t *testing.T) {
	e := s.setup(t)
	e.start()
	ref := fmt.Sprintf("%08x-0000-4000-8000-%012x", rand.Uint32(), rand.Uint64()&0xffffffffffff)
	in := e.appointment(9, 0)
	in.Ref = ref
	created, err := e.b.Scheduler.CreateAppointment(e.ctx, in)
	if err != nil {
		t.Fatalf("CreateAppointment: %v", err)
	}
	e.mine[created.ID] = true
	direct := e.book(10, 0)
	got := e.read(100)
	if len(got) != 2 || got[0].Appointment.ID != created.ID || got[1].Appointment.ID != direct {
		t.Fatalf("read %s; want the changes of %s and %s", describe(got), created.ID, direct)
	}
	if got[0].Appointment.Ref != ref {
		t.Errorf("the booking made through the Scheduler has Ref %q; want %q", got[0].Appointment.Ref, ref)
	}
	if got[1].Appointment.Ref != "" {
		t.Errorf("the booking made directly in the EHR has Ref %q; want none", got[1].Appointment.Ref)
	}
}

// describe lists changes as id@time status for messages.
func describe(cs []ehr.AppointmentChange) string {
	out := "["
	for i, c := range cs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s@%s %s", c.Appointment.ID, c.Appointment.UpdatedAt.Format(time.RFC3339Nano), c.Appointment.Status)
	}
	return out + "]"
}
