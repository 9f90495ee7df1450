package ehrtest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The appointment cases of TestScheduler.

func (s suite) createAppointment(t *testing.T) {
	e := s.setup(t)
	id, agent := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"},
		ehr.Period{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)})
	in := ehr.Appointment{
		AgentID:    id,
		Start:      e.at(0, 10, 0).In(time.FixedZone("", 2*3600)),
		End:        e.at(0, 10, 45).In(time.FixedZone("", 2*3600)),
		Reason:     "Annual check-up",
		LocationID: agent.LocationIDs[0],
		Patient: ehr.PatientContact{
			FirstName:   "María José",
			LastName:    "López-García",
			DateOfBirth: "1980-02-29",
			Email:       e.email("maria"),
			Phone:       "+34 600 000 000",
		},
	}
	got := e.book(in)
	if got.ID == "" || got.ExternalID == "" || got.Source == "" {
		t.Errorf("created appointment has id %q, externalId %q, source %q; want all set", got.ID, got.ExternalID, got.Source)
	}
	if got.Status != ehr.StatusBooked {
		t.Errorf("created appointment status = %q; want booked", got.Status)
	}
	checkAppointment(t, "created", got, in)

	read, err := e.b.Scheduler.GetAppointment(e.ctx, got.ID)
	if err != nil {
		t.Fatalf("GetAppointment(%q): %v", got.ID, err)
	}
	checkAppointment(t, "read back", read, in)
	if read.ID != got.ID || read.ExternalID != got.ExternalID || read.Source != got.Source || read.Status != ehr.StatusBooked {
		t.Errorf("read back id %q, externalId %q, source %q, status %q; want %q, %q, %q, booked",
			read.ID, read.ExternalID, read.Source, read.Status, got.ID, got.ExternalID, got.Source)
	}
}

func (s suite) findAppointment(t *testing.T) {
	e := s.setup(t)
	id, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"}, ehr.Period{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)})
	in := func(h, m int, ref string) ehr.Appointment {
		return ehr.Appointment{AgentID: id, Start: e.at(0, h, m), End: e.at(0, h, m+30), Reason: "check-up", Ref: ref,
			Patient: ehr.PatientContact{FirstName: "Ana", LastName: "Lopez", DateOfBirth: "1980-02-29", Email: e.email("ana")}}
	}
	ref, other := fmt.Sprintf("%08x-0000-4000-8000-000000000001", rand.Uint32()), fmt.Sprintf("%08x-0000-4000-8000-000000000002", rand.Uint32())
	e.book(in(10, 30, other)) // the same agent, another booking
	want := e.book(in(10, 0, ref))
	got, found, err := e.b.Scheduler.FindAppointment(e.ctx, in(10, 0, ref))
	if err != nil || !found || got.ID != want.ID {
		t.Fatalf("FindAppointment(%s) = %q %v %v; want %q", ref, got.ID, found, err, want.ID)
	}
	missing := fmt.Sprintf("%08x-0000-4000-8000-000000000003", rand.Uint32())
	if _, found, err := e.b.Scheduler.FindAppointment(e.ctx, in(10, 0, missing)); err != nil || found {
		t.Fatalf("FindAppointment of a ref never booked: %v %v", found, err)
	}
}

// checkAppointment compares the fields a caller gives.
func checkAppointment(t *testing.T, what string, got, want ehr.Appointment) {
	t.Helper()
	if got.AgentID != want.AgentID || !got.Start.Equal(want.Start) || !got.End.Equal(want.End) ||
		got.Reason != want.Reason || got.LocationID != want.LocationID || got.Patient != want.Patient {
		t.Errorf("%s appointment = %+v;\nwant (in these fields) %+v", what, got, want)
	}
}

func (s suite) getAppointmentUnknown(t *testing.T) {
	e := s.setup(t)
	_, err := e.b.Scheduler.GetAppointment(e.ctx, "missing-"+e.tag)
	if !errors.Is(err, ehr.ErrAppointmentNotFound) {
		t.Errorf("GetAppointment(unknown) error = %v; want ErrAppointmentNotFound", err)
	}
}

func (s suite) listAppointments(t *testing.T) {
	e := s.setup(t)
	free := []ehr.Period{
		{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)},
		{Start: e.at(1, 8, 0), End: e.at(1, 18, 0)},
	}
	agent1, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"}, free...)
	agent2, _ := e.agent("Ben", "Smith", "cardiology", []string{"loc1"}, free...)
	e1, e2 := e.email("first"), e.email("second")
	a1 := e.book(e.appointment(agent1, e.at(0, 9, 0), 30, e1))
	a2 := e.book(e.appointment(agent1, e.at(0, 11, 0), 30, e2))
	a3 := e.book(e.appointment(agent1, e.at(1, 9, 0), 30, e1))
	b1 := e.book(e.appointment(agent2, e.at(0, 9, 0), 30, e1))
	if _, err := e.b.Scheduler.CancelAppointment(e.ctx, a2.ID, "Patient request"); err != nil {
		t.Fatalf("CancelAppointment: %v", err)
	}

	e.checkListings([]listing{
		{"agent", ehr.AppointmentFilter{AgentID: agent1}, []string{a1.ID, a2.ID, a3.ID}},
		{"agent and cancelled", ehr.AppointmentFilter{AgentID: agent1, Status: ehr.StatusCancelled}, []string{a2.ID}},
		{"agent and booked", ehr.AppointmentFilter{AgentID: agent1, Status: ehr.StatusBooked}, []string{a1.ID, a3.ID}},
		{"agent and start in [from, to)", ehr.AppointmentFilter{AgentID: agent1, From: e.at(0, 0, 0), To: e.at(0, 11, 0)}, []string{a1.ID}},
		{"agent and from", ehr.AppointmentFilter{AgentID: agent1, From: e.at(0, 10, 0)}, []string{a2.ID, a3.ID}},
		{"agent and to", ehr.AppointmentFilter{AgentID: agent1, To: e.at(1, 0, 0)}, []string{a1.ID, a2.ID}},
		{"patient e-mail", ehr.AppointmentFilter{PatientEmail: e1}, []string{a1.ID, a3.ID, b1.ID}},
		{"patient e-mail and agent", ehr.AppointmentFilter{PatientEmail: e1, AgentID: agent2}, []string{b1.ID}},
		{"other patient", ehr.AppointmentFilter{PatientEmail: e2}, []string{a2.ID}},
		{"no match", ehr.AppointmentFilter{AgentID: agent2, Status: ehr.StatusCancelled}, nil},
	})
	e.checkPages(agent1, []string{a1.ID, a2.ID, a3.ID})
}

// listing is a filter of appointments and the ids it should list.
type listing struct {
	name string
	f    ehr.AppointmentFilter
	want []string
}

// checkListings lists the appointments of each filter, on one page of 50,
// and compares the ids and the totalCount.
func (e *env) checkListings(cases []listing) {
	t := e.t
	t.Helper()
	for _, c := range cases {
		c.f.Page, c.f.Limit = 1, 50
		pg, err := e.b.Scheduler.ListAppointments(e.ctx, c.f)
		if err != nil {
			t.Errorf("%s: ListAppointments: %v", c.name, err)
			continue
		}
		got := appointmentIDs(pg.Items)
		if !sameSet(got, c.want) || pg.TotalCount != len(c.want) {
			t.Errorf("%s: ListAppointments = %v (totalCount %d); want %v", c.name, got, pg.TotalCount, c.want)
		}
	}
}

// checkPages lists the appointments of agent, which are all (three), in
// pages of two, and checks each page and that together they hold each
// appointment once.
func (e *env) checkPages(agent string, all []string) {
	t := e.t
	t.Helper()
	var seen []string
	for page, want := range map[int]int{1: 2, 2: 1} {
		f := ehr.AppointmentFilter{AgentID: agent, Page: page, Limit: 2}
		pg, err := e.b.Scheduler.ListAppointments(e.ctx, f)
		if err != nil {
			t.Fatalf("ListAppointments(%+v): %v", f, err)
		}
		if len(pg.Items) != want || pg.TotalCount != 3 || pg.Page != page || pg.Limit != 2 {
			t.Errorf("page %d: %d items, totalCount %d, page %d, limit %d; want %d items, 3, %d, 2",
				page, len(pg.Items), pg.TotalCount, pg.Page, pg.Limit, want, page)
		}
		seen = append(seen, appointmentIDs(pg.Items)...)
	}
	if !sameSet(seen, all) || len(seen) != 3 {
		t.Errorf("the pages hold %v; want each of %v once", seen, all)
	}
}

func (s suite) cancelAppointment(t *testing.T) {
	e := s.setup(t)
	id, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"},
		ehr.Period{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)})
	in := e.appointment(id, e.at(0, 10, 0), 30, e.email("cancel"))
	a := e.book(in)
	got, err := e.b.Scheduler.CancelAppointment(e.ctx, a.ID, "Patient request")
	if err != nil {
		t.Fatalf("CancelAppointment(%q): %v", a.ID, err)
	}
	if got.ID != a.ID || got.Status != ehr.StatusCancelled {
		t.Errorf("cancelled appointment id %q status %q; want %q cancelled", got.ID, got.Status, a.ID)
	}
	checkAppointment(t, "cancelled", got, in)
	read, err := e.b.Scheduler.GetAppointment(e.ctx, a.ID)
	if err != nil || read.Status != ehr.StatusCancelled {
		t.Errorf("GetAppointment after cancel = status %q, %v; want cancelled", read.Status, err)
	}
}

func (s suite) rescheduleAppointment(t *testing.T) {
	e := s.setup(t)
	id, _ := e.agent("Ana", "Lopez", "cardiology", []string{"loc1"},
		ehr.Period{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)})
	a := e.book(e.appointment(id, e.at(0, 10, 0), 30, e.email("move")))
	start, end := e.at(0, 15, 0), e.at(0, 15, 45)
	got, err := e.b.Scheduler.RescheduleAppointment(e.ctx, a.ID, start, end)
	if err != nil {
		t.Fatalf("RescheduleAppointment(%q): %v", a.ID, err)
	}
	if got.ID != a.ID || !got.Start.Equal(start) || !got.End.Equal(end) {
		t.Errorf("rescheduled = id %q %s–%s; want %q %s–%s", got.ID,
			got.Start.Format(time.RFC3339), got.End.Format(time.RFC3339), a.ID, start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	if got.Status == ehr.StatusCancelled {
		t.Errorf("rescheduled appointment is cancelled")
	}
	read, err := e.b.Scheduler.GetAppointment(e.ctx, a.ID)
	if err != nil || !read.Start.Equal(start) || !read.End.Equal(end) {
		t.Errorf("GetAppointment after reschedule = %s–%s, %v; want %s–%s",
			read.Start.Format(time.RFC3339), read.End.Format(time.RFC3339), err, start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
}

func (s suite) cancelRescheduleUnknown(t *testing.T) {
	e := s.setup(t)
	missing := "missing-" + e.tag
	if _, err := e.b.Scheduler.CancelAppointment(e.ctx, missing, "gone"); !errors.Is(err, ehr.ErrAppointmentNotFound) {
		t.Errorf("CancelAppointment(unknown) error = %v; want ErrAppointmentNotFound", err)
	}
	_, err := e.b.Scheduler.RescheduleAppointment(e.ctx, missing, e.at(0, 10, 0), e.at(0, 10, 30))
	if !errors.Is(err, ehr.ErrAppointmentNotFound) {
		t.Errorf("RescheduleAppointment(unknown) error = %v; want ErrAppointmentNotFound", err)
	}
}

func (s suite) getAppointments(t *testing.T) {
	e := s.setup(t)
	id, _ := e.agent("Gia", "Batch", "cardiology", []string{"loc1"}, ehr.Period{Start: e.at(0, 8, 0), End: e.at(0, 18, 0)})
	var want []string
	for h := 9; h < 12; h++ {
		want = append(want, e.book(e.appointment(id, e.at(0, h, 0), 30, e.email("batch"))).ID)
	}
	if _, err := e.b.Scheduler.CancelAppointment(e.ctx, want[1], ""); err != nil {
		t.Fatal(err)
	}
	ask := append([]string{"unknown-" + e.tag, want[2], "not an id!"}, want...)
	got, err := e.b.Scheduler.GetAppointments(e.ctx, ask)
	if err != nil || !sameSet(appointmentIDs(got), want) || len(got) != len(want) {
		t.Fatalf("GetAppointments(%v) = %v, %v; want %v once each", ask, appointmentIDs(got), err, want)
	}
	for _, a := range got {
		if a.Source == "" || a.AgentID != id || a.Patient.Email != e.email("batch") || (a.ID == want[1]) != (a.Status == ehr.StatusCancelled) {
			t.Errorf("appointment %+v", a)
		}
	}
	if got, err := e.b.Scheduler.GetAppointments(e.ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetAppointments(none) = %v, %v", got, err)
	}
}
