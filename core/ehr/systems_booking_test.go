package ehr

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// named is Systems whose integration EHR, for every business, is one of
// several named systems; a test switches it, or removes systems, as a
// reload of the EHR systems file does.
type named struct {
	mu          sync.Mutex
	integration string
	systems     map[string]Scheduler
}

func (n *named) set(integration string, systems map[string]Scheduler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.integration, n.systems = integration, systems
}

func (n *named) Search(string) []System { return nil }
func (n *named) Integration(string) (string, Scheduler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.integration, n.systems[n.integration]
}
func (n *named) SchedulerOf(name string) Scheduler {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.systems[name]
}
func (n *named) MultiPractice() bool { return false }

// twoSystems is a Scheduling over the systems one and two, one the
// integration EHR.
func twoSystems() (*Scheduling, *calendar, *calendar, *named) {
	one, two := newCalendar(chicago), newCalendar(chicago)
	s := scheduling(one)
	systems := &named{}
	systems.set("one", map[string]Scheduler{"one": one, "two": two})
	s.systems = systems
	return s, one, two, systems
}

// otherPatients puts into c, under id, an appointment of another patient
// (as its front desk would) and returns it.
func otherPatients(c *calendar, id string) Appointment {
	c.mu.Lock()
	defer c.mu.Unlock()
	start := time.Date(2030, 3, 6, 15, 0, 0, 0, time.UTC)
	a := Appointment{ID: id, AgentID: "dr-1", Start: start, End: start.Add(30 * time.Minute), Status: StatusBooked,
		Patient: PatientContact{FirstName: "Zed", LastName: "Other"}, Source: "two"}
	c.appts[id] = a
	return a
}

// One agent's calendar is its EHR's: two practices whose integration EHR
// is the same system hold the agent's time once between them.
func TestBook_AnAgentsTimeIsHeldOncePerEHRSystemWhicheverBusinessBooks(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	c := newCalendar(chicago)
	s := scheduling(c)
	shared := &named{}
	shared.set("shared", map[string]Scheduler{"shared": c})
	s.systems = shared
	h := Hold{ID: "h-a", Kind: HoldBook, AgentID: "dr-1", Subject: "pat-a", Business: a, System: "shared",
		Start: time.Date(2030, 3, 4, 15, 0, 0, 0, time.UTC), End: time.Date(2030, 3, 4, 15, 30, 0, 0, time.UTC)}
	if err := s.holds.Take(context.Background(), h, time.Minute); err != nil { // practice A's booking, under way
		t.Fatal(err)
	}
	id, err := NewTenancy(shared, practices{"owner-b": {b}}).Act(patientCaller("pat-b"), b, UseBook)
	if err != nil {
		t.Fatal(err)
	}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.Business = id
	if _, err := s.Book(patientCaller("pat-b"), r); !errors.Is(err, ErrAgentBusy) {
		t.Fatalf("practice B's booking of the same time: %v, want ErrAgentBusy", err)
	}
	if len(c.CreateAppointmentCalls()) != 0 {
		t.Fatal("the EHR was asked to book a time another practice holds")
	}
}

// After a reload moves the integration EHR from system one to system two,
// which holds another patient's appointment under the id of a booking,
// the patient's listing, replay, cancel and move go to system one; once
// system one is gone they fail closed and system two is never asked.
func TestScheduling_BookingsFollowTheirEHRSystemAcrossAReload(t *testing.T) {
	s, one, two, systems := twoSystems()
	pat := patientCaller("pat")
	keyed := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	keyed.IdempotencyKey = "k1"
	first, err := s.Book(pat, keyed)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Book(pat, request("2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	otherPatients(two, first.Appointment.ID)

	systems.set("two", map[string]Scheduler{"one": one, "two": two})
	p, err := s.Appointments(pat, AppointmentFilter{})
	if err != nil || p.TotalCount != 2 || p.Items[0].Patient.LastName != "Lopez" || p.Items[1].Patient.LastName != "Lopez" {
		t.Fatalf("the listing after the reload: %+v %v; want the patient's two of system one", p, err)
	}
	again, err := s.Book(pat, keyed)
	if err != nil || !again.Replayed || again.Appointment.Patient.LastName != "Lopez" {
		t.Fatalf("the replay after the reload: %+v %v", again, err)
	}
	if _, err := s.Cancel(pat, "", first.Appointment.ID, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reschedule(pat, RescheduleRequest{ID: second.Appointment.ID, Start: at("2030-03-05T09:00:00-06:00"), End: at("2030-03-05T09:30:00-06:00")}); err != nil {
		t.Fatal(err)
	}
	if one.appts[first.Appointment.ID].Status != StatusCancelled || two.appts[first.Appointment.ID].Status != StatusBooked {
		t.Fatal("the cancel did not reach system one alone")
	}
	// Staff act on the integration EHR in force.
	two.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, nil }
	if p, err := s.Appointments(caller("desk"), AppointmentFilter{}); err != nil || len(two.ListAppointmentsCalls()) != 1 || len(one.ListAppointmentsCalls()) != 0 {
		t.Fatalf("staff listing: %+v %v", p, err)
	}

	asked := len(two.GetAppointmentCalls()) + len(two.GetAppointmentsCalls())
	systems.set("two", map[string]Scheduler{"two": two})
	for what, err := range map[string]error{
		"listing": func() error { _, err := s.Appointments(pat, AppointmentFilter{}); return err }(),
		"replay":  func() error { _, err := s.Book(pat, keyed); return err }(),
		"cancel":  func() error { _, err := s.Cancel(pat, "", second.Appointment.ID, ""); return err }(),
		"move": func() error {
			_, err := s.Reschedule(pat, RescheduleRequest{ID: second.Appointment.ID, Start: at("2030-03-05T10:00:00-06:00"), End: at("2030-03-05T10:30:00-06:00")})
			return err
		}(),
	} {
		if !errors.Is(err, ErrEHRSystemGone) || core.KindOf(err) != core.KindUnavailable {
			t.Errorf("%s once system one is gone: %v, want ErrEHRSystemGone", what, err)
		}
	}
	if n := len(two.GetAppointmentCalls()) + len(two.GetAppointmentsCalls()); n != asked {
		t.Fatalf("system two was asked %d times for what system one holds", n-asked)
	}
}

// A booking whose answer was lost is settled in the EHR system its hold
// recorded, whichever is the integration EHR by then; a system no longer
// configured is not replaced by another.
func TestReconcile_SettlesAHoldInTheEHRSystemItRecorded(t *testing.T) {
	s, one, two, systems := twoSystems()
	create := one.CreateAppointmentFunc
	one.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		if _, err := create(ctx, a); err != nil { // it lands, the answer is lost
			return Appointment{}, err
		}
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	for _, c := range []*calendar{one, two} {
		c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
			for _, a := range c.appts {
				if a.Ref == ref.Ref {
					return a, true, nil
				}
			}
			return Appointment{}, false, nil
		}
	}
	if _, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); err == nil {
		t.Fatal("want a time-out")
	}
	s.holds.(*memHolds).now = func() time.Time { return nowTest.Add(time.Hour) }

	systems.set("two", map[string]Scheduler{"two": two})
	if r, err := s.Reconcile(context.Background(), 10); !errors.Is(err, ErrEHRSystemGone) || r != (Reconciled{Failed: 1}) {
		t.Fatalf("reconcile with system one gone: %+v %v", r, err)
	}
	systems.set("two", map[string]Scheduler{"one": one, "two": two})
	s.holds.(*memHolds).now = func() time.Time { return nowTest.Add(2 * time.Hour) }
	if r, err := s.Reconcile(context.Background(), 10); err != nil || r != (Reconciled{Recorded: 1}) {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if len(two.FindAppointmentCalls()) != 0 {
		t.Fatal("the reconciler asked the integration EHR in force, not the hold's")
	}
	if got, _ := s.bookings.BookedBy(context.Background(), "u", ""); len(got) != 1 || got[0].System != "one" {
		t.Fatalf("the booking is recorded in its system: %+v", got)
	}
}

// A booking recorded before bookings recorded their system (and not yet
// pinned) is read and changed in the integration EHR of its business in
// force, and its change is noted on it.
func TestScheduling_ABookingOfNoSystemIsInItsBusinesssIntegrationEHR(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	start := time.Date(2030, 3, 6, 15, 0, 0, 0, time.UTC)
	c.appts["old-1"] = Appointment{ID: "old-1", AgentID: "dr-1", Start: start, End: start.Add(30 * time.Minute), Status: StatusBooked, Source: "test"}
	if _, err := s.bookings.Record(context.Background(), Booking{Subject: "pat", AppointmentID: "old-1", Start: start}); err != nil {
		t.Fatal(err)
	}
	pat := patientCaller("pat")
	if p, err := s.Appointments(pat, AppointmentFilter{}); err != nil || p.TotalCount != 1 {
		t.Fatalf("listing: %+v %v", p, err)
	}
	if _, err := s.Cancel(pat, "", "old-1", ""); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.bookings.BookedBy(context.Background(), "pat", ""); len(got) != 1 || !got[0].Cancelled || got[0].System != "" {
		t.Fatalf("the booking after its cancel: %+v", got)
	}
}
