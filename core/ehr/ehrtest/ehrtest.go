// Package ehrtest holds the contract suites that every ehr.Scheduler and
// every ehr.RecordSearcher implementation passes (the FHIR and
// WebSocket-bot adapters alike), in the manner of testing/fstest.TestFS:
// TestScheduler here, TestRecordSearcher in records.go.
//
// An adapter's test calls TestScheduler with a function that returns a
// fresh backend for each subtest, with a way to seed it with agents:
//
//	func TestClient_SchedulerContract(t *testing.T) {
//		ehrtest.TestScheduler(t, func(t *testing.T) ehrtest.Backend {
//			srv := wsbottest.Start(t)
//			c := newClient(t, srv.URL())
//			return ehrtest.Backend{Scheduler: c, AddAgent: func(t *testing.T, a ehr.Agent, free []ehr.Period) string {
//				return srv.AddAgent(a, free)
//			}}
//		})
//	}
//
// The values the suite seeds carry a random tag (in family names,
// specialties, location ids and e-mail addresses), and every listing it
// checks is filtered by one of them, so a backend that shares its server
// with earlier runs passes as well as an empty one.
//
// What the suite pins down beyond the port's comments:
//   - listings: agents filtered by name (case-insensitive; the suite asks
//     for a whole family name in another case, which a "contains" and a
//     "starts with" match both find), specialty and location id;
//     appointments by agent, status, start in [From, To) and patient
//     e-mail; every filter combines with the others; paging is 1-based and
//     a page reports the totalCount of the whole listing and echoes Page and
//     Limit;
//   - FreePeriods returns the seeded free spans clipped to [from, to) and
//     less booked appointments (adjacent spans may come merged or split:
//     the suite compares the time they cover, instant by instant between
//     their bounds, not the spans themselves — and without the core's
//     MergePeriods, so a bug in it is not the suite's too);
//   - CreateAppointment returns status booked, with ID, ExternalID and
//     Source set and every field as given (times compared as instants);
//   - missing records are ehr.ErrAgentNotFound and
//     ehr.ErrAppointmentNotFound (errors.Is), for cancel and reschedule too;
//   - GetAppointments returns, once each, exactly those of the ids asked
//     that the backend holds (cancelled ones too), unknown and malformed
//     ids left out.
//
// Refusing double bookings is the core's job, not the backend's; the suite
// books only free time.
package ehrtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// Backend is one Scheduler under test with a way to seed it.
type Backend struct {
	Scheduler ehr.Scheduler
	// AddAgent creates an agent (ID may be ignored; return the id the
	// Scheduler knows it by) whose calendar is free during free and busy
	// otherwise.
	AddAgent func(t *testing.T, a ehr.Agent, free []ehr.Period) string
}

// TestScheduler runs the Scheduler contract against backends made by
// newBackend, which is called once for every subtest.
func TestScheduler(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Helper()
	s := suite{newBackend: newBackend}

	t.Run("ListAgents_FiltersByNameSpecialtyAndLocation", s.listAgentsFilters)
	t.Run("ListAgents_Pages", s.listAgentsPaging)
	t.Run("GetAgent_ReturnsEveryField", s.getAgent)
	t.Run("GetAgent_UnknownIsAgentNotFound", s.getAgentUnknown)
	t.Run("FreePeriods_ClipsToTheRangeAndExcludesBookings", s.freePeriods)
	t.Run("CreateAppointment_BooksAndReturnsEveryField", s.createAppointment)
	t.Run("FindAppointment_FindsTheOneCreatedUnderItsRef", s.findAppointment)
	t.Run("GetAppointment_UnknownIsAppointmentNotFound", s.getAppointmentUnknown)
	t.Run("GetAppointments_ReturnsThoseItHoldsOfTheIDsAsked", s.getAppointments)
	t.Run("ListAppointments_FiltersAndPages", s.listAppointments)
	t.Run("CancelAppointment_MarksItCancelled", s.cancelAppointment)
	t.Run("RescheduleAppointment_MovesIt", s.rescheduleAppointment)
	t.Run("CancelAndReschedule_UnknownIsAppointmentNotFound", s.cancelRescheduleUnknown)
}

type suite struct {
	newBackend func(t *testing.T) Backend
}

// env is one subtest's backend, its tag and the day it books on.
type env struct {
	t   *testing.T
	b   Backend
	ctx context.Context
	tag string    // random lower-case letters, unique to the subtest
	day time.Time // midnight UTC, a week ahead
}

func (s suite) setup(t *testing.T) *env {
	t.Helper()
	b := s.newBackend(t)
	if b.Scheduler == nil || b.AddAgent == nil {
		t.Fatal("ehrtest: the backend needs a Scheduler and AddAgent")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return &env{
		t:   t,
		b:   b,
		ctx: ctx,
		tag: randomTag(),
		day: time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 7),
	}
}

func randomTag() string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 8)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}

// at is the day's hour:minute in UTC, days after the env's day.
func (e *env) at(days, hour, minute int) time.Time {
	return e.day.AddDate(0, 0, days).Add(time.Duration(hour)*time.Hour + time.Duration(minute)*time.Minute)
}

// agent seeds an agent with the given family name (the tag is appended),
// specialty and locations (both tagged), free during free.
func (e *env) agent(first, family, specialty string, locations []string, free ...ehr.Period) (string, ehr.Agent) {
	e.t.Helper()
	last := family + e.tag
	a := ehr.Agent{
		FirstName: first,
		LastName:  last,
		Name:      first + " " + last,
		Specialty: specialty + "-" + e.tag,
		Email:     strings.ToLower(first) + "." + e.tag + "@clinic.example",
		Timezone:  "America/New_York",
	}
	for _, l := range locations {
		a.LocationIDs = append(a.LocationIDs, l+"-"+e.tag)
	}
	id := e.b.AddAgent(e.t, a, free)
	if id == "" {
		e.t.Fatal("AddAgent returned an empty id")
	}
	a.ID = id
	return id, a
}

// book creates an appointment that must succeed.
func (e *env) book(a ehr.Appointment) ehr.Appointment {
	e.t.Helper()
	got, err := e.b.Scheduler.CreateAppointment(e.ctx, a)
	if err != nil {
		e.t.Fatalf("CreateAppointment(%s %s–%s): %v", a.AgentID, a.Start.Format(time.RFC3339), a.End.Format(time.RFC3339), err)
	}
	return got
}

func (e *env) appointment(agentID string, start time.Time, minutes int, email string) ehr.Appointment {
	return ehr.Appointment{
		AgentID:    agentID,
		Start:      start,
		End:        start.Add(time.Duration(minutes) * time.Minute),
		Reason:     "Follow-up visit",
		LocationID: "loc1-" + e.tag,
		Patient: ehr.PatientContact{
			FirstName:   "Ana",
			LastName:    "Lopez",
			DateOfBirth: "1980-02-01",
			Email:       email,
			Phone:       "+15125550100",
		},
	}
}

func (e *env) email(local string) string { return local + "." + e.tag + "@patient.example" }

func (s suite) listAgentsFilters(t *testing.T) {
	e := s.setup(t)
	free := ehr.Period{Start: e.at(0, 9, 0), End: e.at(0, 17, 0)}
	ana, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"}, free)
	ben, _ := e.agent("Ben", "Smith", "dermatology", []string{"loc2"}, free)
	cara, _ := e.agent("Cara", "Anders", "cardiology", []string{"loc1", "loc2"}, free)

	cases := []struct {
		name string
		f    ehr.AgentFilter
		want []string
	}{
		{"name, other case", ehr.AgentFilter{Name: strings.ToUpper("Lopez" + e.tag)}, []string{ana}},
		{"name, lower case", ehr.AgentFilter{Name: "smith" + e.tag}, []string{ben}},
		{"specialty", ehr.AgentFilter{Specialty: "cardiology-" + e.tag}, []string{ana, cara}},
		{"location", ehr.AgentFilter{LocationID: "loc2-" + e.tag}, []string{ben, cara}},
		{"specialty and location", ehr.AgentFilter{Specialty: "cardiology-" + e.tag, LocationID: "loc2-" + e.tag}, []string{cara}},
		{"name and specialty", ehr.AgentFilter{Name: "anders" + e.tag, Specialty: "dermatology-" + e.tag}, nil},
		{"no match", ehr.AgentFilter{Specialty: "surgery-" + e.tag}, nil},
	}
	for _, c := range cases {
		c.f.Page, c.f.Limit = 1, 50
		pg, err := e.b.Scheduler.ListAgents(e.ctx, c.f)
		if err != nil {
			t.Errorf("%s: ListAgents(%+v): %v", c.name, c.f, err)
			continue
		}
		got := agentIDs(pg.Items)
		if !sameSet(got, c.want) {
			t.Errorf("%s: ListAgents(%+v) = %v; want %v", c.name, c.f, got, c.want)
		}
		if pg.TotalCount != len(c.want) {
			t.Errorf("%s: totalCount = %d; want %d", c.name, pg.TotalCount, len(c.want))
		}
	}
}

func (s suite) listAgentsPaging(t *testing.T) {
	e := s.setup(t)
	free := ehr.Period{Start: e.at(0, 9, 0), End: e.at(0, 17, 0)}
	var all []string
	for i, first := range []string{"Ada", "Bo", "Cy", "Di", "Ed"} {
		id, _ := e.agent(first, fmt.Sprintf("Pager%c", 'a'+i), "paging", []string{"loc1"}, free)
		all = append(all, id)
	}
	var seen []string
	for page, want := range map[int]int{1: 2, 2: 2, 3: 1, 4: 0} {
		f := ehr.AgentFilter{Specialty: "paging-" + e.tag, Page: page, Limit: 2}
		pg, err := e.b.Scheduler.ListAgents(e.ctx, f)
		if err != nil {
			t.Fatalf("ListAgents(%+v): %v", f, err)
		}
		if len(pg.Items) != want || pg.TotalCount != 5 || pg.Page != page || pg.Limit != 2 {
			t.Errorf("page %d: %d items, totalCount %d, page %d, limit %d; want %d items, 5, %d, 2",
				page, len(pg.Items), pg.TotalCount, pg.Page, pg.Limit, want, page)
		}
		seen = append(seen, agentIDs(pg.Items)...)
	}
	if !sameSet(seen, all) || len(seen) != len(all) {
		t.Errorf("the pages hold %v; want each of %v once", seen, all)
	}
}

func (s suite) getAgent(t *testing.T) {
	e := s.setup(t)
	id, want := e.agent("Ana", "Lopez", "cardiology", []string{"loc1", "loc2"},
		ehr.Period{Start: e.at(0, 9, 0), End: e.at(0, 17, 0)})
	got, err := e.b.Scheduler.GetAgent(e.ctx, id)
	if err != nil {
		t.Fatalf("GetAgent(%q): %v", id, err)
	}
	checkAgent(t, got, want)

	pg, err := e.b.Scheduler.ListAgents(e.ctx, ehr.AgentFilter{Specialty: want.Specialty, Page: 1, Limit: 10})
	if err != nil || len(pg.Items) != 1 {
		t.Fatalf("ListAgents by specialty = %+v, %v; want the agent", pg, err)
	}
	checkAgent(t, pg.Items[0], want)
}

func checkAgent(t *testing.T, got, want ehr.Agent) {
	t.Helper()
	if got.ID != want.ID || got.FirstName != want.FirstName || got.LastName != want.LastName ||
		got.Name != want.Name || got.Specialty != want.Specialty || got.Email != want.Email ||
		got.Timezone != want.Timezone || !sameSet(got.LocationIDs, want.LocationIDs) {
		t.Errorf("agent = %+v; want %+v", got, want)
	}
}

func (s suite) getAgentUnknown(t *testing.T) {
	e := s.setup(t)
	_, err := e.b.Scheduler.GetAgent(e.ctx, "missing-"+e.tag)
	if !errors.Is(err, ehr.ErrAgentNotFound) {
		t.Errorf("GetAgent(unknown) error = %v; want ErrAgentNotFound", err)
	}
}

func (s suite) freePeriods(t *testing.T) {
	e := s.setup(t)
	id, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"},
		ehr.Period{Start: e.at(0, 9, 0), End: e.at(0, 12, 0)},
		ehr.Period{Start: e.at(0, 13, 0), End: e.at(0, 17, 0)},
		ehr.Period{Start: e.at(1, 9, 0), End: e.at(1, 10, 0)},
	)
	check := func(what string, from, to time.Time, want ...ehr.Period) {
		t.Helper()
		got, err := e.b.Scheduler.FreePeriods(e.ctx, id, from, to)
		if err != nil {
			t.Fatalf("%s: FreePeriods: %v", what, err)
		}
		if !sameCoverage(got, want) {
			t.Errorf("%s: FreePeriods(%s, %s) = %s; want %s", what,
				from.Format(time.RFC3339), to.Format(time.RFC3339), periodsString(got), periodsString(want))
		}
	}
	check("whole days", e.at(0, 0, 0), e.at(2, 0, 0),
		ehr.Period{Start: e.at(0, 9, 0), End: e.at(0, 12, 0)},
		ehr.Period{Start: e.at(0, 13, 0), End: e.at(0, 17, 0)},
		ehr.Period{Start: e.at(1, 9, 0), End: e.at(1, 10, 0)})
	check("clipped", e.at(0, 10, 0), e.at(0, 16, 0),
		ehr.Period{Start: e.at(0, 10, 0), End: e.at(0, 12, 0)},
		ehr.Period{Start: e.at(0, 13, 0), End: e.at(0, 16, 0)})
	check("busy only", e.at(0, 12, 0), e.at(0, 13, 0))

	e.book(e.appointment(id, e.at(0, 14, 0), 30, e.email("free")))
	check("less a booking", e.at(0, 10, 0), e.at(0, 16, 0),
		ehr.Period{Start: e.at(0, 10, 0), End: e.at(0, 12, 0)},
		ehr.Period{Start: e.at(0, 13, 0), End: e.at(0, 14, 0)},
		ehr.Period{Start: e.at(0, 14, 30), End: e.at(0, 16, 0)})
}

func agentIDs(as []ehr.Agent) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return ids
}

func appointmentIDs(as []ehr.Appointment) []string {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.ID
	}
	return ids
}

// sameSet reports whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// sameCoverage reports whether a and b cover the same time: between any
// two neighbouring bounds of either, an instant is in a period of a
// exactly when it is in one of b (how either is cut into periods aside).
func sameCoverage(a, b []ehr.Period) bool {
	var bounds []time.Time
	for _, p := range append(slices.Clone(a), b...) {
		bounds = append(bounds, p.Start, p.End)
	}
	slices.SortFunc(bounds, time.Time.Compare)
	covered := func(ps []ehr.Period, at time.Time) bool {
		return slices.ContainsFunc(ps, func(p ehr.Period) bool { return !at.Before(p.Start) && at.Before(p.End) })
	}
	for i := 1; i < len(bounds); i++ {
		if mid := bounds[i-1].Add(bounds[i].Sub(bounds[i-1]) / 2); bounds[i].After(bounds[i-1]) && covered(a, mid) != covered(b, mid) {
			return false
		}
	}
	return true
}

func periodsString(ps []ehr.Period) string {
	if len(ps) == 0 {
		return "[]"
	}
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = p.Start.UTC().Format("01-02T15:04") + "–" + p.End.UTC().Format("01-02T15:04")
	}
	return "[" + strings.Join(parts, " ") + "]"
}
