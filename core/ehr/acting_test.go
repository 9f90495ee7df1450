package ehr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// practices is Practices over a map of memberships.
type practices map[string][]string // subject → business ids

func (p practices) BusinessesOf(_ context.Context, subject string) ([]string, error) {
	return p[subject], nil
}

func (p practices) BusinessExists(_ context.Context, id string) (bool, error) {
	for _, ids := range p {
		if slices.Contains(ids, id) {
			return true, nil
		}
	}
	return false, nil
}

// multi is Systems of a multi-practice deployment: a per business.
type multi map[string]System

func (m multi) Search(b string) []System {
	if s, ok := m[b]; ok {
		return []System{s}
	}
	return nil
}
func (m multi) Integration(string) (string, Scheduler) { return "", nil }
func (m multi) SchedulerOf(string) Scheduler           { return nil }
func (m multi) MultiPractice() bool                    { return true }

func TestActing_FollowsTheContractsRules(t *testing.T) {
	const a, b, c = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002", "cccccccc-0000-0000-0000-000000000003"
	p := practices{"staff-a": {a}, "staff-ab": {a, b}, "owner-c": {c}}
	for _, tc := range []struct {
		name      string
		subject   string
		requested string
		patient   bool
		multi     bool
		want      string
		err       error
	}{
		{"multi: only membership", "staff-a", "", false, true, a, nil},
		{"multi: named membership", "staff-ab", b, false, true, b, nil},
		{"multi: named in upper case", "staff-ab", "BBBBBBBB-0000-0000-0000-000000000002", false, true, b, nil},
		{"multi: two memberships, none named", "staff-ab", "", false, true, "", ErrBusinessRequired},
		{"multi: no membership, none named", "stranger", "", false, true, "", ErrBusinessRequired},
		{"multi: staff naming another business", "staff-a", b, false, true, "", ErrBusinessNotFound},
		{"multi: staff naming no business", "staff-a", "dddddddd-0000-0000-0000-000000000004", false, true, "", ErrBusinessNotFound},
		{"multi: patient naming any business", "patient", c, true, true, c, nil},
		{"multi: patient naming none that exists", "patient", "dddddddd-0000-0000-0000-000000000004", true, true, "", ErrBusinessNotFound},
		{"multi: patient naming nothing", "patient", "", true, true, "", ErrBusinessRequired},
		{"single: no membership acts for none", "stranger", "", false, false, "", nil},
		{"single: two memberships act for none", "staff-ab", "", false, false, "", nil},
		{"single: only membership, none named, acts for none", "staff-a", "", false, false, "", nil},
		{"single: staff naming another business", "staff-a", b, false, false, "", ErrBusinessNotFound},
		{"single: patient naming a business", "patient", a, true, false, a, nil},
		{"single: patient naming none that exists", "patient", "dddddddd-0000-0000-0000-000000000004", true, false, "", ErrBusinessNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := acting(context.Background(), p, tc.subject, lower(tc.requested), tc.patient, tc.multi)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("acting = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func lower(s string) string { return strings.ToLower(s) }

func TestActing_PatientContextDependsOnTheEndpoint(t *testing.T) {
	patient := core.Actor{Subject: "p", Scopes: core.ParseScopes("patient/Appointment.cus")}
	staff := core.Actor{Subject: "s", Scopes: core.ParseScopes("user/Patient.rs user/Appointment.cruds")}
	both := core.Actor{Subject: "b", Scopes: core.ParseScopes("user/Appointment.s patient/Appointment.c")}
	for _, tc := range []struct {
		actor core.Actor
		use   Use
		want  bool
	}{
		{patient, UseBook, true}, {patient, UseAppointments, true}, {patient, UseChange, true}, {patient, UseAgents, true},
		{patient, UseSearch, false},
		{staff, UseBook, false}, {staff, UseAgents, false}, {staff, UseSearch, false},
		{both, UseAppointments, false}, {both, UseBook, true},
		{core.Actor{Subject: "x", Scopes: core.ParseScopes("system/Patient.rs")}, UseAgents, false},
	} {
		if got := patientContext(tc.actor, tc.use); got != tc.want {
			t.Errorf("%s on use %d: patient context %v, want %v", tc.actor.Scopes, tc.use, got, tc.want)
		}
	}
}

func TestSearch_AsksOnlyTheActingBusinesssSystemsWithItsOwnCacheEntry(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	ehrA, ehrB := ehrWith([]Patient{pat("1", "Smith", "A", "2000-01-01")}, nil), ehrWith([]Patient{pat("2", "Smith", "B", "2001-01-01")}, nil)
	systems := multi{a: sys("a", ehrA), b: sys("b", ehrB)}
	tenancy := NewTenancy(systems, practices{"u": {a, b}})
	s := NewService(systems, memCache(), Config{CacheTTL: 60e9})

	if _, err := s.Search(caller("u"), SearchRequest{Query: "smith"}); !errors.Is(err, ErrBusinessRequired) {
		t.Fatalf("search with no acting business: %v, want business_required", err)
	}
	if _, err := tenancy.Act(caller("u"), "", UseSearch); !errors.Is(err, ErrBusinessRequired) {
		t.Fatalf("member of two naming none: %v", err)
	}
	for _, tc := range []struct{ business, source string }{{a, "a"}, {b, "b"}, {a, "a"}} {
		id, err := tenancy.Act(caller("u"), tc.business, UseSearch)
		if err != nil || id != tc.business {
			t.Fatalf("act for %s: %q %v", tc.business, id, err)
		}
		r, err := s.Search(caller("u"), SearchRequest{Business: id, Query: "smith"})
		if err != nil || fmt.Sprint(r.Sources) != "["+tc.source+"]" || r.TotalCount != 1 {
			t.Fatalf("search for %s: %+v %v", tc.business, r, err)
		}
	}
	if len(ehrA.SearchPatientsCalls()) != 1 || len(ehrB.SearchPatientsCalls()) != 1 {
		t.Fatalf("EHR calls a=%d b=%d; want one each (b not answered from a's cache entry, a's second from its own)",
			len(ehrA.SearchPatientsCalls()), len(ehrB.SearchPatientsCalls()))
	}
}

func TestIntegration_APatientsBookingsArePerActingBusiness(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	s := scheduling(newCalendar(chicago))
	tenancy := NewTenancy(s.systems, practices{"owner": {a, b}})
	pat := patientCaller("p")
	at := func(business string) string {
		id, err := tenancy.Act(pat, business, UseBook)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.Business = at(a)
	booked, err := s.Book(pat, r)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := s.Appointments(pat, AppointmentFilter{Business: at(b)}); err != nil || p.TotalCount != 0 {
		t.Fatalf("listing at b: %+v %v; want none of a's", p, err)
	}
	if _, err := s.Cancel(pat, at(b), booked.Appointment.ID, ""); !errors.Is(err, ErrAppointmentNotFound) {
		t.Fatalf("cancel at b of a's booking: %v, want not found", err)
	}
	if p, err := s.Appointments(pat, AppointmentFilter{Business: at(a)}); err != nil || p.TotalCount != 1 {
		t.Fatalf("listing at a: %+v %v; want its booking", p, err)
	}
}

// perBusiness is Systems of a multi-practice deployment: an integration
// EHR per business, the system "ehr-<business>".
type perBusiness map[string]Scheduler

func (p perBusiness) Search(string) []System { return nil }
func (p perBusiness) Integration(b string) (string, Scheduler) {
	if p[b] == nil {
		return "", nil
	}
	return "ehr-" + b, p[b]
}
func (p perBusiness) SchedulerOf(name string) Scheduler {
	if b, ok := strings.CutPrefix(name, "ehr-"); ok {
		return p[b]
	}
	return nil
}
func (p perBusiness) MultiPractice() bool { return true }

func TestReconcile_SettlesAHoldInTheEHROfItsBusiness(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	ca, cb := newCalendar(chicago), newCalendar(chicago)
	create := ca.CreateAppointmentFunc
	ca.CreateAppointmentFunc = func(ctx context.Context, x Appointment) (Appointment, error) {
		if _, err := create(ctx, x); err != nil { // it lands, the answer is lost
			return Appointment{}, err
		}
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	ca.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		for _, x := range ca.appts {
			if x.Ref == ref.Ref {
				return x, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	s := scheduling(ca)
	s.systems = perBusiness{a: ca, b: cb}
	id, err := NewTenancy(s.systems, practices{"u": {a}}).Act(caller("u"), "", UseBook)
	if err != nil {
		t.Fatal(err)
	}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.Business = id
	if _, err := s.Book(caller("u"), r); err == nil {
		t.Fatal("want a time-out")
	}
	if _, err := s.Agents(caller("u"), AgentFilter{}); !errors.Is(err, ErrBusinessRequired) {
		t.Fatalf("a call with no acting business in a multi-practice deployment: %v", err)
	}
	s.holds.(*memHolds).now = func() time.Time { return nowTest.Add(time.Hour) }
	if r, err := s.Reconcile(context.Background(), 10); err != nil || r != (Reconciled{Recorded: 1}) {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if len(cb.FindAppointmentCalls()) != 0 {
		t.Fatal("the reconciler asked another business's EHR")
	}
	if ids, _ := s.bookings.BookedBy(context.Background(), "u", a); len(ids) != 1 {
		t.Fatalf("the booking is recorded for its business: %v", ids)
	}
}

func TestActing_PersonLinksActForAMembershipInEveryDeployment(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	p := practices{"staff-a": {a}, "staff-ab": {a, b}}
	single, multiple := FixedSystems{}, multi{a: {}, b: {}}
	staff := func(sub string) context.Context {
		return core.WithActor(context.Background(), core.Actor{Subject: sub, Scopes: core.ParseScopes("user/Patient.u")})
	}
	patient := func(sub string) context.Context {
		return core.WithActor(context.Background(), core.Actor{Subject: sub, Scopes: core.ParseScopes("patient/*.cruds")})
	}
	for _, tc := range []struct {
		name      string
		systems   Systems
		ctx       context.Context
		requested string
		want      string
		err       error
	}{
		{"single: only membership, none named", single, staff("staff-a"), "", a, nil},
		{"single: two memberships, none named", single, staff("staff-ab"), "", "", ErrBusinessRequired},
		{"single: two memberships, one named", single, staff("staff-ab"), b, b, nil},
		{"single: named in upper case", single, staff("staff-ab"), strings.ToUpper(b), b, nil},
		{"single: no membership", single, staff("stranger"), "", "", ErrBusinessRequired},
		{"single: naming another business", single, staff("staff-a"), b, "", ErrBusinessNotFound},
		{"single: a patient naming a business has no scope", single, patient("p"), a, "", core.ErrInsufficientScope},
		{"single: a patient with a user scope is no member", single, core.WithActor(context.Background(), core.Actor{Subject: "p",
			Scopes: core.ParseScopes("patient/*.cruds user/Patient.u")}), a, "", ErrBusinessNotFound},
		{"multi: only membership", multiple, staff("staff-a"), "", a, nil},
		{"multi: two memberships, none named", multiple, staff("staff-ab"), "", "", ErrBusinessRequired},
		{"multi: naming another business", multiple, staff("staff-a"), b, "", ErrBusinessNotFound},
		{"multi: a patient naming a business has no scope", multiple, patient("p"), b, "", core.ErrInsufficientScope},
		{"no scope: refused before the business", single, core.WithActor(context.Background(), core.Actor{Subject: "stranger",
			Scopes: core.ParseScopes("user/Patient.rs")}), "", "", core.ErrInsufficientScope},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewTenancy(tc.systems, p).Act(tc.ctx, tc.requested, UseLinks)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Fatalf("Act = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
		})
	}
	// The other uses resolve as before in a single-practice deployment:
	// no business named, none acted for.
	for _, u := range []Use{UseBook, UseAppointments, UseChange, UseAgents} {
		if got, err := NewTenancy(single, p).Act(staff("staff-a"), "", u); got != "" || err != nil {
			t.Errorf("use %d: %q, %v; want none", u, got, err)
		}
	}
	// A search naming none acts for the caller's only membership (its
	// links apply), else for none, and is never refused for it.
	for _, c := range []struct{ caller, want string }{{"staff-a", a}, {"staff-ab", ""}, {"stranger", ""}} {
		if got, err := NewTenancy(single, p).Act(staff(c.caller), "", UseSearch); got != c.want || err != nil {
			t.Errorf("search by %s: %q, %v; want %q", c.caller, got, err, c.want)
		}
	}
}

// askedOf counts the calls made of c's EHR.
func askedOf(c *calendar) int {
	return len(c.ListAgentsCalls()) + len(c.GetAgentCalls()) + len(c.FreePeriodsCalls()) + len(c.ListAppointmentsCalls()) +
		len(c.GetAppointmentCalls()) + len(c.CreateAppointmentCalls()) + len(c.CancelAppointmentCalls()) + len(c.RescheduleAppointmentCalls())
}

// withListings lets c answer the listings of agents and appointments.
func withListings(c *calendar) *calendar {
	c.ListAgentsFunc = func(context.Context, AgentFilter) (Page[Agent], error) {
		return Page[Agent]{Items: []Agent{chicago}}, nil
	}
	c.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, nil }
	return c
}

// In a multi-practice deployment every scheduling call that names no
// acting business is refused, and no EHR is asked.
func TestScheduling_AMultiPracticeCallNamingNoBusinessIsRefused(t *testing.T) {
	const a = "aaaaaaaa-0000-0000-0000-000000000001"
	ca := withListings(newCalendar(chicago))
	s := scheduling(ca)
	s.systems = perBusiness{a: ca}
	u := caller("u")
	for what, call := range map[string]func() error{
		"book": func() error {
			_, err := s.Book(u, request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00"))
			return err
		},
		"appointments": func() error { _, err := s.Appointments(u, AppointmentFilter{}); return err },
		"cancel":       func() error { _, err := s.Cancel(u, "", "appt-1", ""); return err },
		"reschedule": func() error {
			_, err := s.Reschedule(u, RescheduleRequest{ID: "appt-1", Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")})
			return err
		},
		"agents": func() error { _, err := s.Agents(u, AgentFilter{}); return err },
		"agent":  func() error { _, err := s.Agent(u, "", "dr-1"); return err },
		"availability": func() error {
			_, err := s.Availability(u, AvailabilityRequest{AgentID: "dr-1", From: day("2030-03-04"), To: day("2030-03-04")})
			return err
		},
	} {
		if err := call(); !errors.Is(err, ErrBusinessRequired) {
			t.Errorf("%s naming no business: %v, want business_required", what, err)
		}
	}
	if n := askedOf(ca); n != 0 {
		t.Fatalf("the EHR was asked %d times", n)
	}
}

// Each scheduling call is answered by the integration EHR of the business
// it names, and no other business's EHR is asked.
func TestScheduling_TheNamedBusinesssEHRAnswers(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	ca, cb := withListings(newCalendar(chicago)), withListings(newCalendar(chicago))
	s := scheduling(ca)
	s.systems = perBusiness{a: ca, b: cb}
	u := caller("u")
	for _, tc := range []struct {
		business     string
		ehr, another *calendar
	}{{a, ca, cb}, {b, cb, ca}} {
		before := askedOf(tc.another)
		r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
		r.Business = tc.business
		booked, err := s.Book(u, r)
		if err != nil {
			t.Fatalf("book at %s: %v", tc.business, err)
		}
		id := booked.Appointment.ID
		if p, err := s.Agents(u, AgentFilter{Business: tc.business}); err != nil || len(p.Items) != 1 {
			t.Fatalf("agents at %s: %+v %v", tc.business, p, err)
		}
		if _, err := s.Agent(u, tc.business, "dr-1"); err != nil {
			t.Fatalf("agent at %s: %v", tc.business, err)
		}
		if _, err := s.Availability(u, AvailabilityRequest{Business: tc.business, AgentID: "dr-1", From: day("2030-03-05"), To: day("2030-03-05")}); err != nil {
			t.Fatalf("availability at %s: %v", tc.business, err)
		}
		if _, err := s.Appointments(u, AppointmentFilter{Business: tc.business}); err != nil {
			t.Fatalf("appointments at %s: %v", tc.business, err)
		}
		if _, err := s.Reschedule(u, RescheduleRequest{Business: tc.business, ID: id,
			Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")}); err != nil {
			t.Fatalf("reschedule at %s: %v", tc.business, err)
		}
		if _, err := s.Cancel(u, tc.business, id, ""); err != nil {
			t.Fatalf("cancel at %s: %v", tc.business, err)
		}
		if len(tc.ehr.ListAgentsCalls()) != 1 || len(tc.ehr.ListAppointmentsCalls()) != 1 || tc.ehr.appts[id].Status != StatusCancelled {
			t.Fatalf("the EHR of %s did not answer every call", tc.business)
		}
		if n := askedOf(tc.another) - before; n != 0 {
			t.Fatalf("calls at %s asked another business's EHR %d times", tc.business, n)
		}
	}
}
