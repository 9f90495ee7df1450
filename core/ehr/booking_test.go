package ehr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/core"
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
// no two overlapping holds of one agent, a subject's future appointments
// counted against MaxFuture (with what booked records), leases.
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
				if o.AgentID == h.AgentID && o.Start.Before(h.End) && h.Start.Before(o.End) {
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
	by    map[string][]string
	start map[string]time.Time
	gone  map[string]bool // cancelled
	holds *memHolds       // removes a booking's hold with its record
}

func (l *memBookingLog) future(sub string, now time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, id := range l.by[sub] {
		if !l.gone[id] && l.start[id].After(now) {
			n++
		}
	}
	return n
}

func memBookings() *memBookingLog {
	l := &memBookingLog{by: map[string][]string{}, start: map[string]time.Time{}, gone: map[string]bool{}}
	l.BookingLogMock = &BookingLogMock{
		RecordFunc: func(_ context.Context, b Booking) (bool, error) {
			if b.HoldID != "" && l.holds != nil {
				l.holds.ReleaseFunc(context.Background(), b.HoldID)
			}
			l.mu.Lock()
			defer l.mu.Unlock()
			by := scoped(b.Subject, b.Business)
			if slices.Contains(l.by[by], b.AppointmentID) {
				return false, nil
			}
			l.by[by] = append(l.by[by], b.AppointmentID)
			l.start[b.AppointmentID] = b.Start
			return true, nil
		},
		ChangedFunc: func(_ context.Context, _, id string, start time.Time, cancelled bool) error {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.start[id], l.gone[id] = start, cancelled
			return nil
		},
		BookedByFunc: func(_ context.Context, sub, business string) ([]string, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return slices.Clone(l.by[scoped(sub, business)]), nil
		},
		IsBookedByFunc: func(_ context.Context, sub, business, id string) (bool, error) {
			l.mu.Lock()
			defer l.mu.Unlock()
			return slices.Contains(l.by[scoped(sub, business)], id), nil
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
	s := NewScheduling(FixedSystems{SchedulingEHR: c}, holds, idem, log, memCounter(), &memTx{idem: idem, bookings: log, sync: newMemSync()}, cfg)
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

func TestBook_ChecksTheRequest(t *testing.T) {
	ok := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	tests := []struct {
		name, mention string
		edit          func(*BookingRequest)
	}{
		{"start in the past", "start must be in the future", func(r *BookingRequest) {
			r.Start, r.End = at("2030-02-01T09:00:00-06:00"), at("2030-02-01T09:30:00-06:00")
		}},
		{"start without offset", "start must be an RFC 3339", func(r *BookingRequest) { r.Start = at("2030-03-04 09:00") }},
		{"end before start", "end must be after start", func(r *BookingRequest) { r.End = at("2030-03-04T08:00:00-06:00") }},
		{"shorter than 5 minutes", "at least 5 minutes", func(r *BookingRequest) { r.End = at("2030-03-04T09:04:00-06:00") }},
		{"longer than 8 hours", "at most 8 hours", func(r *BookingRequest) { r.End = at("2030-03-04T17:01:00-06:00") }},
		{"end and duration", "exclusive", func(r *BookingRequest) { r.DurationMinutes = 30 }},
		{"neither end nor duration", "durationMinutes is required", func(r *BookingRequest) { r.End = at("") }},
		{"no agent", "agentId is required", func(r *BookingRequest) { r.AgentID = " " }},
		{"no first name", "patient.firstName is required", func(r *BookingRequest) { r.Patient.FirstName = "" }},
		{"no last name", "patient.lastName is required", func(r *BookingRequest) { r.Patient.LastName = "" }},
		{"birth date in the future", "dateOfBirth must be in the past", func(r *BookingRequest) { r.Patient.DateOfBirth = "2031-01-01" }},
		{"birth date not a date", "dateOfBirth must be a date", func(r *BookingRequest) { r.Patient.DateOfBirth = "01/02/1980" }},
		{"bad e-mail", "patient.email", func(r *BookingRequest) { r.Patient.Email = "ana@" }},
		{"no contact", "valid email or phone", func(r *BookingRequest) { r.Patient.Email = "" }},
		{"bad phone", "patient.phone", func(r *BookingRequest) { r.Patient.Email, r.Patient.Phone = "", "call me" }},
		{"phone of 16 digits", "patient.phone", func(r *BookingRequest) { r.Patient.Email, r.Patient.Phone = "", "1234567890123456" }},
		{"e-mail with an empty domain label", "patient.email", func(r *BookingRequest) { r.Patient.Email = "ana@example..com" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCalendar(chicago)
			r := ok
			tt.edit(&r)
			_, err := scheduling(c).Book(caller("u"), r)
			if !errors.Is(err, ErrInvalidAppointment) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("got %v, want validation naming %q", err, tt.mention)
			}
			if len(c.CreateAppointmentCalls()) != 0 {
				t.Fatal("an invalid request was booked")
			}
		})
	}
	r := ok
	r.End, r.DurationMinutes, r.Patient.Email, r.Patient.Phone = at(""), 45, "", "+1 512 555 0100"
	b, err := scheduling(newCalendar(chicago)).Book(caller("u"), r)
	if err != nil || b.Appointment.End.Sub(b.Appointment.Start) != 45*time.Minute || b.Appointment.Status != StatusBooked {
		t.Fatalf("duration booking: %+v %v", b, err)
	}
}

func TestBook_AgentMustExistAndBeFree(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T10:00:00-06:00")
	if _, err := s.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	overlap := request("2030-03-04T09:30:00-06:00", "2030-03-04T10:30:00-06:00")
	if _, err := s.Book(caller("u"), overlap); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("overlapping booking: %v", err)
	}
	evening := request("2030-03-04T17:30:00-06:00", "2030-03-04T18:30:00-06:00")
	if _, err := s.Book(caller("u"), evening); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("booking past the working day: %v", err)
	}
	unknown := r
	unknown.AgentID = "dr-404"
	if _, err := s.Book(caller("u"), unknown); !errors.Is(err, ErrAgentNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
	if len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("%d bookings", len(c.CreateAppointmentCalls()))
	}
}

func TestBook_ConcurrentBookingsOfTheSameTimeGiveOneAppointment(t *testing.T) {
	// In the bubble the EHR's booking takes a moment of fake time, so every
	// other booking runs to its end while the first is in the EHR.
	synctest.Test(t, func(t *testing.T) {
		c := newCalendar(chicago)
		create := c.CreateAppointmentFunc
		c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
			time.Sleep(5 * time.Millisecond)
			return create(ctx, a)
		}
		s := scheduling(c)
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Go(func() {
				_, errs[i] = s.Book(caller(fmt.Sprint("u", i)), request("2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00"))
			})
		}
		wg.Wait()
		ok, conflicts := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrAgentUnavailable), errors.Is(err, ErrAgentBusy):
				conflicts++
			}
		}
		if ok != 1 || conflicts != 7 || len(c.appts) != 1 {
			t.Fatalf("%d booked, %d conflicts, %d appointments", ok, conflicts, len(c.appts))
		}
	})
}

func TestBook_IdempotencyKeyReplaysTheFirstAnswer(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.IdempotencyKey = "key-1"
	first, err := s.Book(caller("u"), r)
	if err != nil || first.Replayed {
		t.Fatal(err)
	}
	again, err := s.Book(caller("u"), r)
	if err != nil || !again.Replayed || again.Appointment.ID != first.Appointment.ID || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("replay: %+v %v, %d bookings", again, err, len(c.CreateAppointmentCalls()))
	}
	other := r
	other.Reason = "something else"
	if _, err := s.Book(caller("u"), other); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("reused key: %v", err)
	}
	if _, err := s.Book(caller("someone-else"), r); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("another caller's same key is a new request: %v", err)
	}

	// A refused first answer is replayed as refused.
	busy := r
	busy.IdempotencyKey = "key-2"
	if _, err := s.Book(caller("u"), busy); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatal(err)
	}
	delete(c.appts, first.Appointment.ID) // the time frees up
	if b, err := s.Book(caller("u"), busy); !errors.Is(err, ErrAgentUnavailable) || !b.Replayed {
		t.Fatalf("the first answer was 409; the repeat got %+v %v", b, err)
	}

	// An upstream failure that booked nothing is not stored: the same key
	// may try again.
	c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindUnavailable, Code: "circuit_open", Message: "down"}
	}
	retry := request("2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00")
	retry.IdempotencyKey = "key-3"
	if _, err := s.Book(caller("u"), retry); core.KindOf(err) != core.KindUnavailable {
		t.Fatal(err)
	}
	if len(s.idem.(*IdempotencyStoreMock).ReleaseCalls()) != 1 {
		t.Fatal("the key of a call that was never sent was kept")
	}
	if _, err := s.Book(caller("u"), BookingRequest{IdempotencyKey: "bad key"}); !errors.Is(err, ErrInvalidIdempotencyKey) {
		t.Fatalf("bad key: %v", err)
	}
}

func TestBook_BusyAgentIsRetriedWithTheSameKey(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	// Another booking of the agent, overlapping, is under way.
	other := Hold{ID: "h-other", Kind: HoldBook, AgentID: "dr-1", Subject: "x",
		Start: time.Date(2030, 3, 4, 19, 15, 0, 0, time.UTC), End: time.Date(2030, 3, 4, 19, 45, 0, 0, time.UTC)}
	if err := s.holds.Take(context.Background(), other, time.Minute); err != nil {
		t.Fatal(err)
	}
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.IdempotencyKey = "key-1"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, ErrAgentBusy) {
		t.Fatalf("an overlapping hold: %v", err)
	}
	if len(c.CreateAppointmentCalls()) != 0 || len(c.FreePeriodsCalls()) != 0 {
		t.Fatal("the EHR was asked while the time was held by another booking")
	}
	// The same agent at another time is not held up.
	if _, err := s.Book(caller("v"), request("2030-03-04T15:00:00-06:00", "2030-03-04T15:30:00-06:00")); err != nil {
		t.Fatalf("another time of the agent: %v", err)
	}
	_ = s.holds.Release(context.Background(), other.ID)
	if b, err := s.Book(caller("u"), r); err != nil || b.Replayed {
		t.Fatalf("the retry with the same key was not a new request: %+v %v", b, err)
	}
	if n := s.holds.(*memHolds).count(); n != 0 {
		t.Fatalf("%d holds left after the bookings", n)
	}
}

func TestBook_DifferentAgentsDoNotWaitForEachOther(t *testing.T) {
	agents := make([]Agent, 10)
	for i := range agents {
		agents[i] = Agent{ID: fmt.Sprint("dr-", i), Timezone: "America/Chicago"}
	}
	c := newCalendar(agents...)
	// Every booking's EHR call waits until all ten are in the EHR at once:
	// bookings that waited for each other would never get there.
	var arrived sync.WaitGroup
	arrived.Add(len(agents))
	create := c.CreateAppointmentFunc
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		arrived.Done()
		arrived.Wait()
		return create(ctx, a)
	}
	s := scheduling(c)
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
			r.AgentID = agents[i].ID
			_, errs[i] = s.Book(caller("u"), r)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if len(c.appts) != len(agents) {
		t.Fatalf("%d appointments", len(c.appts))
	}
}

func TestBook_LostAnswerIsResumedWithTheSameKey(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	create := c.CreateAppointmentFunc
	timeout := &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		if _, err := create(ctx, a); err != nil { // booked, then the answer is lost
			return Appointment{}, err
		}
		return Appointment{}, timeout
	}
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "key-lost"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, timeout) {
		t.Fatalf("first: %v", err)
	}
	if len(s.idem.(*IdempotencyStoreMock).ReleaseCalls()) != 0 || s.holds.(*memHolds).count() != 1 {
		t.Fatal("a booking whose outcome is unknown gave up its key or its hold")
	}
	// The time stays held: nobody else books it meanwhile.
	if _, err := s.Book(caller("v"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); !errors.Is(err, ErrAgentBusy) {
		t.Fatalf("another caller, same time: %v", err)
	}
	c.CreateAppointmentFunc = create
	b, err := s.Book(caller("u"), r)
	if err != nil || b.Appointment.ID == "" {
		t.Fatalf("the repeat: %+v %v", b, err)
	}
	if len(c.appts) != 1 || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("%d appointments, %d creates: the repeat booked again", len(c.appts), len(c.CreateAppointmentCalls()))
	}
	if ids, _ := s.bookings.BookedBy(context.Background(), "u", ""); len(ids) != 1 || ids[0] != b.Appointment.ID {
		t.Fatalf("booked by u: %v", ids)
	}
	if again, err := s.Book(caller("u"), r); err != nil || !again.Replayed || again.Appointment.ID != b.Appointment.ID {
		t.Fatalf("a third repeat: %+v %v", again, err)
	}
	if n := s.holds.(*memHolds).count(); n != 0 {
		t.Fatalf("%d holds left", n)
	}
}

func TestBook_ResumedBookingNotInTheEHRIsBookedUnderTheSameReference(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	create := c.CreateAppointmentFunc
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: "link dropped"}
	}
	c.FindAppointmentFunc = func(context.Context, Appointment) (Appointment, bool, error) { return Appointment{}, false, nil }
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "key-1"
	if _, err := s.Book(caller("u"), r); core.KindOf(err) != core.KindBadGateway {
		t.Fatal(err)
	}
	c.CreateAppointmentFunc = create
	if _, err := s.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	calls := c.CreateAppointmentCalls()
	if len(calls) != 2 || calls[0].A.Ref == "" || calls[0].A.Ref != calls[1].A.Ref {
		t.Fatalf("creates %d, refs %q", len(calls), calls[0].A.Ref)
	}
}

func TestBook_RefusalOrUnsentCallReleasesTheHold(t *testing.T) {
	for _, fail := range []*core.Error{
		ErrAgentUnavailable,
		{Kind: core.KindUnavailable, Code: "circuit_open", Message: "open"},
		{Kind: core.KindRateLimited, Code: "rate_limited", Message: "slow down"},
	} {
		t.Run(fail.Code, func(t *testing.T) {
			c := newCalendar(chicago)
			c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) { return Appointment{}, fail }
			s := scheduling(c)
			if _, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); !errors.Is(err, fail) {
				t.Fatal(err)
			}
			if n := s.holds.(*memHolds).count(); n != 0 {
				t.Fatalf("%d holds kept after a call that booked nothing", n)
			}
		})
	}
}

func TestReconcile_RecordsWhatTheEHRHoldsAndReleasesTheRest(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	holds := s.holds.(*memHolds)
	create := c.CreateAppointmentFunc
	lost := 0
	c.CreateAppointmentFunc = func(ctx context.Context, a Appointment) (Appointment, error) {
		lost++
		if lost == 1 { // the first lands in the EHR, the second does not
			if _, err := create(ctx, a); err != nil {
				return Appointment{}, err
			}
		}
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	keyed := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	keyed.IdempotencyKey = "k"
	if _, err := s.Book(caller("u"), keyed); err == nil {
		t.Fatal("want a time-out")
	}
	if _, err := s.Book(caller("u"), request("2030-03-04T10:00:00-06:00", "2030-03-04T10:30:00-06:00")); err == nil {
		t.Fatal("want a time-out")
	}
	// Nothing is due before the settle time.
	if r, err := s.Reconcile(context.Background(), 10); err != nil || r != (Reconciled{}) {
		t.Fatalf("early: %+v %v", r, err)
	}
	holds.now = func() time.Time { return nowTest.Add(unknownSettle + time.Second) }
	r, err := s.Reconcile(context.Background(), 10)
	if err != nil || r != (Reconciled{Recorded: 1, Released: 1}) {
		t.Fatalf("reconcile: %+v %v", r, err)
	}
	if holds.count() != 0 {
		t.Fatal("holds left")
	}
	ids, _ := s.bookings.BookedBy(context.Background(), "u", "")
	if len(ids) != 1 {
		t.Fatalf("booked by u: %v", ids)
	}
	if got := eventsOf(s); len(got) != 1 || got[0].Type != core.AppointmentBooked {
		t.Fatalf("events: %+v", got)
	}
	// The key's repeat answers the appointment now, without the EHR's create.
	c.CreateAppointmentFunc = create
	b, err := s.Book(caller("u"), keyed)
	if err != nil || !b.Replayed || b.Appointment.ID != ids[0] {
		t.Fatalf("repeat after reconcile: %+v %v", b, err)
	}
}

func TestReconcile_AnEHRFailureIsTriedAgainLater(t *testing.T) {
	c := newCalendar(chicago)
	c.CreateAppointmentFunc = func(context.Context, Appointment) (Appointment, error) {
		return Appointment{}, &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: "no answer"}
	}
	down := &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: "down"}
	c.FindAppointmentFunc = func(context.Context, Appointment) (Appointment, bool, error) { return Appointment{}, false, down }
	s := scheduling(c)
	holds := s.holds.(*memHolds)
	if _, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")); err == nil {
		t.Fatal("want a time-out")
	}
	holds.now = func() time.Time { return nowTest.Add(time.Hour) }
	r, err := s.Reconcile(context.Background(), 10)
	if !errors.Is(err, down) || r != (Reconciled{Failed: 1}) || holds.count() != 1 {
		t.Fatalf("%+v %v, %d holds", r, err, holds.count())
	}
}

func TestBook_APatientHoldsAtMostTwentyFutureAppointments(t *testing.T) {
	agents := make([]Agent, MaxFutureAppointments+1)
	for i := range agents {
		agents[i] = Agent{ID: fmt.Sprint("dr-", i), Timezone: "America/Chicago"}
	}
	c := newCalendar(agents...)
	s := scheduling(c)
	pat := patientCaller("pat")
	book := func(i int) error {
		r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
		r.AgentID = agents[i].ID
		_, err := s.Book(pat, r)
		return err
	}
	for i := range MaxFutureAppointments {
		if err := book(i); err != nil {
			t.Fatalf("booking %d: %v", i+1, err)
		}
	}
	if err := book(MaxFutureAppointments); !errors.Is(err, ErrAppointmentLimit) {
		t.Fatalf("booking %d: %v", MaxFutureAppointments+1, err)
	}
	if core.KindOf(ErrAppointmentLimit) != core.KindConflict {
		t.Fatal("the limit is not a conflict (409)")
	}
	// A cancelled one frees a place; staff are not limited.
	ids, _ := s.bookings.BookedBy(context.Background(), "pat", "")
	if _, err := s.Cancel(pat, ids[0], ""); err != nil {
		t.Fatal(err)
	}
	if err := book(MaxFutureAppointments); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
	r := request("2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00")
	if _, err := s.Book(caller("reception"), r); err != nil {
		t.Fatalf("staff: %v", err)
	}
}

func TestAppointments_APatientIsRateLimited(t *testing.T) {
	c := newCalendar(chicago)
	c.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, nil }
	s := schedulingWith(c, SchedulingConfig{FingerprintKeys: testFingerprintKeys, RateLimit: 3})
	pat := patientCaller("pat")
	for i := range 3 {
		if _, err := s.Appointments(pat, AppointmentFilter{}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := s.Appointments(pat, AppointmentFilter{})
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Kind != core.KindRateLimited || ce.RetryAfter <= 0 {
		t.Fatalf("fourth call: %v", err)
	}
	if _, err := s.Cancel(pat, "any", ""); core.KindOf(err) != core.KindRateLimited {
		t.Fatalf("cancel past the limit: %v", err)
	}
	for range 5 { // staff are limited by nothing here
		if _, err := s.Appointments(caller("reception"), AppointmentFilter{}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCancelAndReschedule(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	b, err := s.Book(caller("u"), request("2030-03-04T09:00:00-06:00", "2030-03-04T10:00:00-06:00"))
	if err != nil {
		t.Fatal(err)
	}
	id := b.Appointment.ID
	// Moving within its own time is fine: its own slot counts as free.
	moved, err := s.Reschedule(caller("u"), id, at("2030-03-04T09:30:00-06:00"), at("2030-03-04T10:30:00-06:00"))
	if err != nil || !moved.Start.Equal(time.Date(2030, 3, 4, 15, 30, 0, 0, time.UTC)) {
		t.Fatalf("reschedule: %+v %v", moved, err)
	}
	other, _ := s.Book(caller("u"), request("2030-03-04T11:00:00-06:00", "2030-03-04T12:00:00-06:00"))
	if _, err := s.Reschedule(caller("u"), id, at("2030-03-04T11:00:00-06:00"), at("2030-03-04T11:30:00-06:00")); !errors.Is(err, ErrAgentUnavailable) {
		t.Fatalf("onto another appointment: %v", err)
	}
	if _, err := s.Reschedule(caller("u"), id, at("2030-03-04T11:00:00-06:00"), at("2030-03-04T10:00:00-06:00")); !errors.Is(err, ErrInvalidAppointment) {
		t.Fatalf("end before start: %v", err)
	}
	if a, err := s.Cancel(caller("u"), other.Appointment.ID, "sick"); err != nil || a.Status != StatusCancelled {
		t.Fatalf("cancel: %+v %v", a, err)
	}
	if _, err := s.Cancel(caller("u"), other.Appointment.ID, ""); !errors.Is(err, ErrAlreadyCancelled) {
		t.Fatalf("second cancel: %v", err)
	}
	if _, err := s.Reschedule(caller("u"), other.Appointment.ID, at("2030-03-05T09:00:00-06:00"), at("2030-03-05T09:30:00-06:00")); !errors.Is(err, ErrAlreadyCancelled) {
		t.Fatalf("reschedule a cancelled one: %v", err)
	}
	if _, err := s.Cancel(caller("u"), "nope", ""); !errors.Is(err, ErrAppointmentNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func TestAvailability_FollowsTheAgentsTimezoneAcrossDST(t *testing.T) {
	c := newCalendar(newYork)
	// A calendar free all day, every day, to count the hours of a day.
	c.FreePeriodsFunc = func(_ context.Context, _ string, from, to time.Time) ([]Period, error) {
		return []Period{{from.Add(-time.Hour), to.Add(time.Hour)}}, nil
	}
	s := scheduling(c)
	for _, tt := range []struct {
		day   string
		slots int
	}{
		{"2030-03-10", 46}, // spring forward: a 23-hour day
		{"2030-11-03", 50}, // fall back: a 25-hour day
		{"2030-06-01", 48},
	} {
		a, err := s.Availability(caller("u"), "dr-ny", day(tt.day), day(tt.day), 30)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Slots) != tt.slots || a.Timezone != "America/New_York" {
			t.Fatalf("%s: %d slots in %s, want %d", tt.day, len(a.Slots), a.Timezone, tt.slots)
		}
		first := a.Slots[0].Start
		if first.Location().String() != "America/New_York" || first.Hour() != 0 || first.Format("2006-01-02") != tt.day {
			t.Fatalf("%s: first slot %v", tt.day, first)
		}
	}
	spring, _ := s.Availability(caller("u"), "dr-ny", day("2030-03-10"), day("2030-03-10"), 60)
	if got := spring.Slots[2].Start.Format(time.RFC3339); got != "2030-03-10T03:00:00-04:00" {
		t.Fatalf("third hour of the spring-forward day starts %s", got)
	}

	for _, bad := range [][3]string{{"2030-03-10", "2030-04-11", "30"}, {"2030-03-10", "2030-03-09", "30"}, {"10/03/2030", "2030-03-10", "30"}, {"2030-03-10", "2030-03-10", "2"}} {
		var minutes int
		fmt.Sscan(bad[2], &minutes)
		if _, err := s.Availability(caller("u"), "dr-ny", day(bad[0]), day(bad[1]), minutes); !errors.Is(err, ErrInvalidAppointment) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := s.Availability(caller("u"), "dr-x", day("2030-03-10"), day("2030-03-10"), 30); !errors.Is(err, ErrAgentNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestSlots_CutsMergedFreeTime(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2030, 1, 1, h, m, 0, 0, time.UTC) }
	free := []Period{{at(9, 0), at(10, 0)}, {at(10, 0), at(10, 45)}, {at(13, 10), at(13, 50)}, {at(7, 0), at(8, 0)}}
	slots := Slots(free, at(8, 0), at(14, 0), 30*time.Minute, time.UTC)
	var got []string
	for _, s := range slots {
		got = append(got, s.Start.Format("15:04"))
	}
	if strings.Join(got, " ") != "09:00 09:30 10:00 13:10" {
		t.Fatalf("slots %v", got)
	}
}

func TestIntegration_WithoutAnEHR(t *testing.T) {
	s := schedulingWith(nil, SchedulingConfig{FingerprintKeys: testFingerprintKeys})
	if _, err := s.Agents(caller("u"), AgentFilter{}); !errors.Is(err, ErrNoSchedulingEHR) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.Book(caller("u"), BookingRequest{}); !errors.Is(err, ErrNoSchedulingEHR) {
		t.Fatalf("got %v", err)
	}
}

func TestBook_IdempotencyKeepsNoPatientDataAndReplaysFromTheEHR(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.Patient = PatientContact{FirstName: "Zebulon", LastName: "Quixwell", DateOfBirth: "1971-07-19", Email: "zq.marker@example.org", Phone: "+1 555 013 7799"}
	r.IdempotencyKey = "key-1"
	first, err := s.Book(caller("u"), r)
	if err != nil {
		t.Fatal(err)
	}
	idem := s.idem.(*IdempotencyStoreMock)
	stored := idem.CompleteCalls()[0]
	fp := idem.ClaimCalls()[0].Fingerprints[0]
	for _, v := range []string{fmt.Sprintf("%+v", stored.Outcome), fp} {
		for _, marker := range []string{"Zebulon", "Quixwell", "1971-07-19", "zq.marker", "555 013 7799", "5550137799", "check-up"} {
			if strings.Contains(v, marker) {
				t.Fatalf("stored %q holds %q", v, marker)
			}
		}
	}
	if want := (Outcome{AppointmentID: first.Appointment.ID, Status: "booked"}); stored.Outcome != want {
		t.Fatalf("outcome %+v: want only the id and status", stored.Outcome)
	}
	if recs := s.bookings.(*memBookingLog).RecordCalls(); len(recs) != 1 || recs[0].B.Subject != "u" || recs[0].B.AppointmentID != first.Appointment.ID {
		t.Fatalf("booking recorded with the outcome: %+v", recs)
	}
	// The fingerprint is keyed: another key gives another one.
	other := NewScheduling(FixedSystems{SchedulingEHR: c}, s.holds, idem, s.bookings, s.counter, s.tx, SchedulingConfig{FingerprintKeys: [][]byte{[]byte("another key, 32 bytes long.....")}})
	if other.fingerprints("u", "", r)[0] == fp || s.fingerprints("u", "", r)[0] != fp || s.fingerprints("v", "", r)[0] == fp {
		t.Fatal("the fingerprint does not depend on the key and the caller alone")
	}

	// A repeat reads the appointment from the EHR as it is now.
	if _, err := s.Cancel(caller("u"), first.Appointment.ID, ""); err != nil {
		t.Fatal(err)
	}
	gets := len(c.GetAppointmentCalls())
	again, err := s.Book(caller("u"), r)
	if err != nil || !again.Replayed || again.Appointment.ID != first.Appointment.ID || again.Appointment.Status != StatusCancelled {
		t.Fatalf("replay: %+v %v", again, err)
	}
	if len(c.GetAppointmentCalls()) != gets+1 || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatal("the replay did not read the appointment again, or booked anew")
	}
}

func TestAppointments_NeedScopes(t *testing.T) {
	c := newCalendar(chicago)
	s := scheduling(c)
	none := core.WithActor(context.Background(), core.Actor{Subject: "u"})
	readOnly := core.WithActor(context.Background(), core.Actor{Subject: "u", Scopes: core.ParseScopes("user/Appointment.rs patient/Appointment.s")})
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	for _, ctx := range []context.Context{none, readOnly} {
		if _, err := s.Book(ctx, r); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("book: %v", err)
		}
		if _, err := s.Cancel(ctx, "appt-1", ""); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("cancel: %v", err)
		}
		if _, err := s.Reschedule(ctx, "appt-1", at("2030-03-04T10:00:00-06:00"), at("2030-03-04T10:30:00-06:00")); !errors.Is(err, core.ErrInsufficientScope) {
			t.Fatalf("reschedule: %v", err)
		}
	}
	if _, err := s.Appointments(none, AppointmentFilter{}); !errors.Is(err, core.ErrInsufficientScope) {
		t.Fatalf("list: %v", err)
	}
	if len(c.CreateAppointmentCalls())+len(c.GetAppointmentCalls()) != 0 {
		t.Fatal("the EHR was asked for a caller without the scope")
	}
	// Agents need only a valid token.
	if _, err := s.Agent(none, "dr-1"); err != nil {
		t.Fatalf("agent: %v", err)
	}
	if _, err := s.Availability(none, "dr-1", day("2030-03-04"), day("2030-03-04"), 30); err != nil {
		t.Fatalf("availability: %v", err)
	}
}

func TestAppointments_APatientReachesOnlyItsOwn(t *testing.T) {
	c := newCalendar(chicago)
	c.ListAppointmentsFunc = func(_ context.Context, f AppointmentFilter) (Page[Appointment], error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return Page[Appointment]{TotalCount: len(c.appts), Page: f.Page, Limit: f.Limit}, nil
	}
	s := scheduling(c)
	ana, ben := patientCaller("ana"), patientCaller("ben")
	book := func(ctx context.Context, start, end, key string) Appointment {
		t.Helper()
		r := request(start, end)
		r.IdempotencyKey = key
		b, err := s.Book(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		return b.Appointment
	}
	a1 := book(ana, "2030-03-05T09:00:00-06:00", "2030-03-05T09:30:00-06:00", "")
	a2 := book(ana, "2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00", "k1")
	b1 := book(ben, "2030-03-04T10:00:00-06:00", "2030-03-04T10:30:00-06:00", "")
	book(caller("staff"), "2030-03-04T11:00:00-06:00", "2030-03-04T11:30:00-06:00", "")

	p, err := s.Appointments(ana, AppointmentFilter{})
	if err != nil || p.TotalCount != 2 || len(p.Items) != 2 || p.Items[0].ID != a2.ID || p.Items[1].ID != a1.ID {
		t.Fatalf("ana's list (by start): %+v %v", p, err)
	}
	if len(c.ListAppointmentsCalls()) != 0 {
		t.Fatal("a patient's listing asked the EHR for every appointment")
	}
	p, _ = s.Appointments(ana, AppointmentFilter{From: time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), Limit: 1, Page: 1})
	if p.TotalCount != 1 || p.Items[0].ID != a1.ID {
		t.Fatalf("filtered within ana's: %+v", p)
	}
	p, _ = s.Appointments(ana, AppointmentFilter{Page: 2, Limit: 1})
	if p.TotalCount != 2 || len(p.Items) != 1 || p.Items[0].ID != a1.ID {
		t.Fatalf("page 2: %+v", p)
	}

	// Another's appointment, or none, is not found for a patient.
	for _, id := range []string{b1.ID, "appt-404"} {
		if _, err := s.Cancel(ana, id, ""); !errors.Is(err, ErrAppointmentNotFound) {
			t.Fatalf("ana cancels %s: %v", id, err)
		}
		if _, err := s.Reschedule(ana, id, at("2030-03-06T09:00:00-06:00"), at("2030-03-06T09:30:00-06:00")); !errors.Is(err, ErrAppointmentNotFound) {
			t.Fatalf("ana moves %s: %v", id, err)
		}
	}
	if c.appts[b1.ID].Status == StatusCancelled {
		t.Fatal("ben's appointment was cancelled by ana")
	}
	if a, err := s.Cancel(ana, a1.ID, ""); err != nil || a.Status != StatusCancelled {
		t.Fatalf("ana cancels her own: %+v %v", a, err)
	}
	if _, err := s.Reschedule(ana, a2.ID, at("2030-03-06T09:00:00-06:00"), at("2030-03-06T09:30:00-06:00")); err != nil {
		t.Fatalf("ana moves her own: %v", err)
	}
	// Staff reach every appointment.
	if _, err := s.Cancel(caller("staff"), b1.ID, ""); err != nil {
		t.Fatalf("staff cancels ben's: %v", err)
	}
	if p, err := s.Appointments(caller("staff"), AppointmentFilter{}); err != nil || p.TotalCount != 4 {
		t.Fatalf("staff list: %+v %v", p, err)
	}
}

func TestBook_BookedButNotRecordedIsRecordedByTheRepeat(t *testing.T) {
	c := newCalendar(chicago)
	c.FindAppointmentFunc = func(_ context.Context, ref Appointment) (Appointment, bool, error) {
		for _, a := range c.appts {
			if a.Ref == ref.Ref {
				return a, true, nil
			}
		}
		return Appointment{}, false, nil
	}
	s := scheduling(c)
	idem := s.idem.(*IdempotencyStoreMock)
	complete := idem.CompleteFunc
	down := errors.New("database gone")
	idem.CompleteFunc = func(context.Context, string, string, Outcome) error { return down }
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00-06:00")
	r.IdempotencyKey = "k"
	if _, err := s.Book(caller("u"), r); !errors.Is(err, down) {
		t.Fatalf("first: %v", err)
	}
	if len(idem.ReleaseCalls()) != 0 {
		t.Fatal("the key of a booking the EHR made was released")
	}
	idem.CompleteFunc = complete
	b, err := s.Book(caller("u"), r)
	if err != nil || b.Appointment.ID == "" || len(c.CreateAppointmentCalls()) != 1 {
		t.Fatalf("the repeat: %+v %v, %d creates", b, err, len(c.CreateAppointmentCalls()))
	}
	if ids, _ := s.bookings.BookedBy(context.Background(), "u", ""); len(ids) != 1 {
		t.Fatalf("booked by u: %v", ids)
	}
}
