package ehr

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// calendar is an in-memory Scheduler through the moq mock: agents free
// every day from 08:00 to 18:00 local time, less booked appointments.
type calendar struct {
	*SchedulerMock
	mu    sync.Mutex
	appts map[string]Appointment
}

func newCalendar(agents ...Agent) *calendar {
	c := &calendar{appts: map[string]Appointment{}}
	byID := map[string]Agent{}
	for _, a := range agents {
		byID[a.ID] = a
	}
	c.SchedulerMock = &SchedulerMock{
		GetAgentFunc: func(_ context.Context, id string) (Agent, error) {
			if a, ok := byID[id]; ok {
				return a, nil
			}
			return Agent{}, ErrAgentNotFound
		},
		FreePeriodsFunc: func(_ context.Context, id string, from, to time.Time) ([]Period, error) {
			loc, _ := time.LoadLocation(byID[id].Timezone)
			var free []Period
			for d := from.In(loc).AddDate(0, 0, -1); d.Before(to); d = d.AddDate(0, 0, 1) {
				free = append(free, Period{time.Date(d.Year(), d.Month(), d.Day(), 8, 0, 0, 0, loc), time.Date(d.Year(), d.Month(), d.Day(), 18, 0, 0, 0, loc)})
			}
			c.mu.Lock()
			defer c.mu.Unlock()
			var out []Period
			for _, p := range free {
				out = append(out, subtract(p, c.appts, id)...)
			}
			return out, nil
		},
		CreateAppointmentFunc: func(_ context.Context, a Appointment) (Appointment, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			a.ID = fmt.Sprint("appt-", len(c.appts)+1)
			a.ExternalID, a.Source = a.ID, "test"
			c.appts[a.ID] = a
			return a, nil
		},
		GetAppointmentFunc: func(_ context.Context, id string) (Appointment, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if a, ok := c.appts[id]; ok {
				return a, nil
			}
			return Appointment{}, ErrAppointmentNotFound
		},
		GetAppointmentsFunc: func(_ context.Context, ids []string) ([]Appointment, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			var out []Appointment
			for _, id := range ids {
				if a, ok := c.appts[id]; ok {
					out = append(out, a)
				}
			}
			return out, nil
		},
		CancelAppointmentFunc: func(_ context.Context, id, reason string) (Appointment, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			a := c.appts[id]
			a.Status = StatusCancelled
			c.appts[id] = a
			return a, nil
		},
		RescheduleAppointmentFunc: func(_ context.Context, id string, start, end time.Time) (Appointment, error) {
			c.mu.Lock()
			defer c.mu.Unlock()
			a := c.appts[id]
			a.Start, a.End = start, end
			c.appts[id] = a
			return a, nil
		},
	}
	return c
}

// subtract removes the agent's active appointments from p.
func subtract(p Period, appts map[string]Appointment, agent string) []Period {
	out := []Period{p}
	for _, a := range appts {
		if a.AgentID != agent || a.Status == StatusCancelled {
			continue
		}
		var next []Period
		for _, q := range out {
			if !a.Start.Before(q.End) || !a.End.After(q.Start) {
				next = append(next, q)
				continue
			}
			if a.Start.After(q.Start) {
				next = append(next, Period{q.Start, a.Start})
			}
			if a.End.Before(q.End) {
				next = append(next, Period{a.End, q.End})
			}
		}
		out = next
	}
	return out
}

// memHolds is a Holds in memory with the rules of the PostgreSQL store:
// no two overlapping holds of one agent of one EHR system (of one business
// for holds of no system), a subject's future appointments counted
// against MaxFuture (with what booked records), leases.
type memHolds struct {
	*HoldsMock
	mu    sync.Mutex
	holds map[string]*memHold
	now   func() time.Time
}

type memHold struct {
	Hold
	unknown bool
	until   time.Time
}

func newMemHolds(bookings *memBookingLog, now func() time.Time) *memHolds {
	m := &memHolds{holds: map[string]*memHold{}, now: now}
	m.HoldsMock = &HoldsMock{
		TakeFunc: func(_ context.Context, h Hold, lease time.Duration) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if h.MaxFuture > 0 {
				n := bookings.future(h.Subject, m.now())
				for _, o := range m.holds {
					if o.Subject == h.Subject && o.Kind == HoldBook && o.End.After(m.now()) {
						n++
					}
				}
				if n >= h.MaxFuture {
					return ErrAppointmentLimit
				}
			}
			for _, o := range m.holds {
				if calendarOf(o.Hold) == calendarOf(h) && o.AgentID == h.AgentID && o.Start.Before(h.End) && h.Start.Before(o.End) {
					return ErrAgentBusy
				}
				if h.IdempotencyKey != "" && o.Subject == h.Subject && o.IdempotencyKey == h.IdempotencyKey {
					return ErrIdempotencyInProgress
				}
			}
			m.holds[h.ID] = &memHold{Hold: h, until: m.now().Add(lease)}
			return nil
		},
		ReleaseFunc: func(_ context.Context, id string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.holds, id)
			return nil
		},
		UnknownFunc: func(_ context.Context, id string, after time.Duration) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if h, ok := m.holds[id]; ok {
				h.unknown, h.until = true, m.now().Add(after)
			}
			return nil
		},
		ResumeFunc: func(_ context.Context, sub, key string, lease time.Duration) (Hold, bool, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, h := range m.holds {
				if h.Subject == sub && h.IdempotencyKey == key && h.Kind == HoldBook && (h.unknown || h.until.Before(m.now())) {
					h.unknown, h.until = false, m.now().Add(lease)
					h.Attempts++
					return h.Hold, true, nil
				}
			}
			return Hold{}, false, nil
		},
		DueFunc: func(_ context.Context, n int, lease time.Duration) ([]Hold, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []Hold
			for _, h := range m.holds {
				if len(out) < n && h.until.Before(m.now()) {
					h.unknown, h.until = false, m.now().Add(lease)
					h.Attempts++
					out = append(out, h.Hold)
				}
			}
			return out, nil
		},
	}
	return m
}

// calendarOf is the calendar a hold takes time of: its EHR system's, or
// for a hold of no system its business's.
func calendarOf(h Hold) string {
	if h.System == "" {
		return "business:" + h.Business
	}
	return "system:" + h.System
}

// count returns how many holds are kept.
func (m *memHolds) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.holds)
}

// memBookingLog is a BookingLog in memory.
type memBookingLog struct {
	*BookingLogMock
	mu    sync.Mutex
	rows  []memBooking // oldest first
	holds *memHolds    // removes a booking's hold with its record
}

type memBooking struct {
	Booking
	cancelled bool
}

func (l *memBookingLog) future(sub string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.rows {
		if r.Subject == sub && !r.cancelled && r.Start.After(now) {
			n++
		}
	}
	return n
}

func memBookings() *memBookingLog {
	l := &memBookingLog{}
	same := func(r memBooking, sub, business string) bool { return r.Subject == sub && r.Business == business }
	l.BookingLogMock = &BookingLogMock{
		RecordFunc: func(_ context.Context, b Booking) (bool, error) {
			if b.HoldID != "" && l.holds != nil {
				l.holds.ReleaseFunc(context.Background(), b.HoldID)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			for _, r := range l.rows {
				if same(r, b.Subject, b.Business) && r.System == b.System && r.AppointmentID == b.AppointmentID {
					return false, nil
				}
			}
			b.HoldID = ""
			l.rows = append(l.rows, memBooking{Booking: b})
			return true, nil
		},
		ChangedFunc: func(_ context.Context, system, business, id string, start time.Time, cancelled bool) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			for i, r := range l.rows {
				if r.System == system && r.Business == business && r.AppointmentID == id {
					l.rows[i].Start, l.rows[i].cancelled = start, cancelled
				}
			}
			return nil
		},
		BookedByFunc: func(_ context.Context, sub, business string) ([]OwnBooking, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			var out []OwnBooking
			for _, r := range l.rows {
				if same(r, sub, business) {
					out = append(out, OwnBooking{System: r.System, AppointmentID: r.AppointmentID, Cancelled: r.cancelled})
				}
			}
			return out, nil
		},
		IsBookedByFunc: func(_ context.Context, sub, business, id string) (string, bool, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			for i := len(l.rows) - 1; i >= 0; i-- {
				if r := l.rows[i]; same(r, sub, business) && r.AppointmentID == id {
					return r.System, true, nil
				}
			}
			return "", false, nil
		},
	}
	return l
}

// memCounter counts in memory, in one window that never ends.
func memCounter() *CounterMock {
	var mu sync.Mutex
	n := map[string]int64{}
	return &CounterMock{IncrFunc: func(_ context.Context, key string, ttl time.Duration) (int64, time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		n[key]++
		return n[key], ttl, nil
	}}
}

// memIdempotency is an IdempotencyStore in memory.
func memIdempotency() *IdempotencyStoreMock {
	var mu sync.Mutex
	type entry struct {
		fp   string
		out  Outcome
		done bool
	}
	m := map[string]*entry{}
	return &IdempotencyStoreMock{
		ClaimFunc: func(_ context.Context, sub, key string, fps []string) (Outcome, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			e, ok := m[sub+"\x00"+key]
			switch {
			case !ok:
				m[sub+"\x00"+key] = &entry{fp: fps[0]}
				return Outcome{}, false, nil
			case !slices.Contains(fps, e.fp):
				return Outcome{}, false, ErrIdempotencyKeyReused
			case !e.done:
				return Outcome{}, false, ErrIdempotencyInProgress
			}
			return e.out, true, nil
		},
		CompleteFunc: func(_ context.Context, sub, key string, out Outcome) error {
			mu.Lock()
			defer mu.Unlock()
			e := m[sub+"\x00"+key]
			e.out, e.done = out, true
			return nil
		},
		ReleaseFunc: func(_ context.Context, sub, key string) error {
			mu.Lock()
			defer mu.Unlock()
			delete(m, sub+"\x00"+key)
			return nil
		},
	}
}

var (
	chicago = Agent{ID: "dr-1", Name: "Dr One", Timezone: "America/Chicago"}
	newYork = Agent{ID: "dr-ny", Name: "Dr NY", Timezone: "America/New_York"}
	nowTest = time.Date(2030, 3, 1, 12, 0, 0, 0, time.UTC)
)

var testFingerprintKeys = [][]byte{[]byte("0123456789abcdef0123456789abcdef")}

func scheduling(c *calendar) *Scheduling {
	return schedulingWith(c, SchedulingConfig{FingerprintKeys: testFingerprintKeys})
}

func schedulingWith(c Scheduler, cfg SchedulingConfig) *Scheduling {
	log := memBookings()
	holds := newMemHolds(log, func() time.Time { return nowTest })
	log.holds = holds
	idem := memIdempotency()
	s := NewScheduling(FixedSystems{SchedulingName: "test", SchedulingEHR: c}, holds, idem, log, memCounter(), &memTx{idem: idem, bookings: log, sync: newMemSync()}, cfg)
	s.now = func() time.Time { return nowTest }
	return s
}

func request(start, end string) BookingRequest {
	return BookingRequest{AgentID: "dr-1", Start: at(start), End: at(end), Reason: "check-up",
		Patient: PatientContact{FirstName: "Ana", LastName: "Lopez", DateOfBirth: "1980-02-01", Email: "ana@example.com"}}
}

// at is a client's time as httpapi parses it: "" none, a bad one Invalid.
func at(s string) Instant {
	if s == "" {
		return Instant{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return Instant{Invalid: true, Raw: s}
	}
	return Instant{Time: t, Raw: s}
}

// day is a client's date as httpapi parses it: the zero Date when it is
// not one.
func day(s string) Date {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return Date{}
	}
	return Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}
