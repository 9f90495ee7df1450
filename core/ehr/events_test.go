package ehr

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// memTx is a Transactor over the in-memory stores of a test: the events
// a transaction emits are kept when it succeeds.
type memTx struct {
	idem     IdempotencyStore
	bookings BookingLog
	sync     *memSync // sync's states (Repos.Sync)
	mu       sync.Mutex
	events   []core.Event
	// emit, when set, is what Emit returns (a failing outbox).
	emit error
}

func (m *memTx) WithinTx(ctx context.Context, fn func(context.Context, Repos) error) error {
	o := &memOutbox{err: m.emit}
	snap := m.sync.snapshot() // sync's states and intents roll back
	if err := fn(ctx, Repos{Idempotency: m.idem, Bookings: m.bookings, Outbox: o, Sync: m.sync}); err != nil {
		m.sync.restore(snap)
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, o.events...)
	return nil
}

type memOutbox struct {
	events []core.Event
	err    error
}

func (o *memOutbox) Emit(_ context.Context, e core.Event) error {
	if o.err != nil {
		return o.err
	}
	o.events = append(o.events, e)
	return nil
}

// eventsOf returns the appointment events the integration committed.
func eventsOf(s *Scheduling) []core.Event {
	m := s.tx.(*memTx)
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.events)
}

func TestAppointmentEvents_TellWhatTheEHRConfirmedOnce(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	// The patient and the reasons are markers no id or timestamp holds by chance.
	patient := PatientContact{FirstName: "Mk" + rand.Text(), LastName: "Mk" + rand.Text(), DateOfBirth: "1913-04-05",
		Email: "mk" + strings.ToLower(rand.Text()) + "@example.org"}
	reason, cancelReason := "Mk"+rand.Text(), "Mk"+rand.Text()
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.Patient, r.Reason, r.IdempotencyKey = patient, reason, "k-1"
	b, err := s.Book(caller("u"), r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Book(caller("u"), r); err != nil { // a replay
		t.Fatal(err)
	}
	r2 := request("2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00")
	r2.Patient, r2.Reason = patient, reason
	plain, err := s.Book(caller("u"), r2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reschedule(caller("u"), RescheduleRequest{ID: b.Appointment.ID, Start: at("2030-03-04T10:00:00-06:00"), End: at("2030-03-04T10:30:00-06:00")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(caller("u"), "", plain.Appointment.ID, cancelReason); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Cancel(caller("u"), "", plain.Appointment.ID, ""); !errors.Is(err, ErrAlreadyCancelled) { // refused: no event
		t.Fatal(err)
	}

	got := eventsOf(s)
	want := []struct {
		typ    core.EventType
		id     string
		status string
		start  time.Time
	}{
		{core.AppointmentBooked, b.Appointment.ID, "booked", time.Date(2030, 3, 4, 15, 0, 0, 0, time.UTC)},
		{core.AppointmentBooked, plain.Appointment.ID, "booked", time.Date(2030, 3, 4, 17, 0, 0, 0, time.UTC)},
		{core.AppointmentRescheduled, b.Appointment.ID, "booked", time.Date(2030, 3, 4, 16, 0, 0, 0, time.UTC)},
		{core.AppointmentCancelled, plain.Appointment.ID, "cancelled", time.Date(2030, 3, 4, 17, 0, 0, 0, time.UTC)},
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		e := got[i]
		d, ok := e.Data.(core.AppointmentData)
		if e.Type != w.typ || !ok || d.AppointmentID != w.id || d.AgentID != "dr-1" || d.Status != w.status ||
			!d.Start.Equal(w.start) || !d.End.Equal(w.start.Add(30*time.Minute)) || e.BusinessID != "" {
			t.Errorf("event %d: %+v, want %+v", i, e, w)
		}
		body := fmt.Sprintf("%+v", e)
		for _, marker := range []string{patient.FirstName, patient.LastName, patient.DateOfBirth, patient.Email, reason, cancelReason} {
			if strings.Contains(string(body), marker) {
				t.Errorf("event %s holds %q", body, marker)
			}
		}
	}
}

func TestAppointmentEvents_AnUnwrittenEventIsAnError(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	b, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	down := errors.New("database down")
	s.tx.(*memTx).emit = down
	if _, err := s.Cancel(caller("u"), "", b.Appointment.ID, ""); !errors.Is(err, down) {
		t.Fatalf("cancel whose event is not written: %v", err)
	}
}
