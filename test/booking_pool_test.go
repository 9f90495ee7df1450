package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// slowEHR is a wsbot EHR whose calendar check and booking take delay
// each, the two calls a booking makes while it holds its agent's lock.
func slowEHR(t *testing.T, delay time.Duration, agents ...string) *wsbottest.Server {
	t.Helper()
	bot := wsbottest.Start(t)
	for _, id := range agents {
		a := drAna
		a.ID = id
		bot.AddAgent(a, workdays(5))
	}
	bot.SetDelay("agents.availability", delay)
	bot.SetDelay("appointments.create", delay)
	return bot
}

// withParams adds query parameters to a database URL.
func withParams(dbURL, params string) string {
	if strings.Contains(dbURL, "?") {
		return dbURL + "&" + params
	}
	return dbURL + "?" + params
}

// answer is one request's status, error code and time taken, made from any
// goroutine (the harness's do may only run on the test's).
type answer struct {
	status int
	code   string
	took   time.Duration
	err    error
}

func (s *server) call(method, path, token, body string, header ...string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var env struct {
		Code string `json:"code"`
	}
	raw, err := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, took: time.Since(start), err: err}
	if resp.StatusCode >= 300 {
		_ = json.Unmarshal(raw, &env)
		a.code = env.Code
	}
	return a
}

func TestBooking_FortyAgentsAtOnceAgainstASlowEHRAllBookAndReadsGoOn(t *testing.T) {
	const agents = 40
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("dr-%02d", i)
	}
	w := newWorld(t)
	// Each booking's EHR round trip (calendar check and create) takes
	// 1.5 s.
	bot := slowEHR(t, 750*time.Millisecond, ids...)
	// A main pool of 4 connections (what pgxpool gives a 2-core machine).
	s := w.start(func(c *app.Config) {
		c.EHR = integrationFile(t, "wsbot", bot.URL(), "")
		c.DatabaseURL = withParams(w.dbURL, "pool_max_conns=4")
	})
	owner := "owner-pool"
	business := w.createBusiness(owner)
	ownerTok, staffTok := w.token(owner), w.token("reception")
	if a := s.call("GET", "/business/"+business, ownerTok, "", "user-type", "business"); a.err != nil || a.status != 200 {
		t.Fatalf("business read: %+v", a)
	}

	bookings := make([]answer, agents)
	var booking sync.WaitGroup
	for i, id := range ids {
		booking.Add(1)
		go func() {
			defer booking.Done()
			bookings[i] = s.call("POST", "/appointment/customer", staffTok, slotAt(id, 9, 30))
		}()
	}
	stop := make(chan struct{})
	go func() { booking.Wait(); close(stop) }()

	// Reads from four goroutines for as long as bookings run: every one is
	// answered (their latency is a figure of the bench, not asserted here).
	var mu sync.Mutex
	reads := 0
	var failed []answer
	var reading sync.WaitGroup
	for range 4 {
		reading.Add(1)
		go func() {
			defer reading.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				a := s.call("GET", "/business/"+business, ownerTok, "", "user-type", "business")
				mu.Lock()
				if a.err != nil || a.status != 200 {
					failed = append(failed, a)
				} else {
					reads++
				}
				mu.Unlock()
			}
		}()
	}
	reading.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d reads failed, the first: %+v", len(failed), failed[0])
	}
	if reads == 0 {
		t.Fatal("no read was answered while the bookings ran")
	}
	for i, a := range bookings {
		if a.err != nil || a.status != 201 {
			t.Errorf("booking of %s: %+v", ids[i], a)
		}
	}
	var holds int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM booking_holds`).Scan(&holds); err != nil || holds != 0 {
		t.Fatalf("holds left after the bookings: %d %v", holds, err)
	}
	t.Logf("%d bookings of %d agents booked; %d business reads answered meanwhile", agents, agents, reads)
}

func TestBooking_OverlappingBookingsOfOneAgentGiveOneSuccess(t *testing.T) {
	w := newWorld(t)
	bot := slowEHR(t, 500*time.Millisecond, "dr-ana")
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	tok := w.token("reception")

	const n = 6
	answers := make([]answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// 09:00–09:30 and 09:00–10:00 overlap.
			answers[i] = s.call("POST", "/appointment/customer", tok, slotAt("dr-ana", 9, 30+30*(i%2)))
		}()
	}
	wg.Wait()
	booked := 0
	for _, a := range answers {
		switch {
		case a.err == nil && a.status == 201:
			booked++
		case a.err == nil && a.status == 409 && (a.code == ehr.ErrAgentBusy.Code || a.code == ehr.ErrAgentUnavailable.Code):
		default:
			t.Errorf("booking: %+v", a)
		}
	}
	if booked != 1 {
		t.Fatalf("%d of %d overlapping bookings of one agent booked, want 1", booked, n)
	}
	// The same agent at another time is booked.
	if a := s.call("POST", "/appointment/customer", tok, slotAt("dr-ana", 11, 30)); a.err != nil || a.status != 201 {
		t.Fatalf("another time: %+v", a)
	}
}

func TestBooking_LostAnswerIsAnsweredToTheSameIdempotencyKey(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	tok := w.scopedToken("pat-lost", "patient/Appointment.cus")

	// The EHR stores the appointment, then never answers: the call times
	// out (the file's 3 s).
	bot.SetSilent("appointments.create", true)
	first := s.call("POST", "/appointment/customer", tok, slotAt(drAna.ID, 9, 30), "Idempotency-Key", "lost-1")
	if first.err != nil || first.status != 504 {
		t.Fatalf("first: %+v", first)
	}
	bot.SetSilent("appointments.create", false)
	r, appt := s.ehrCall("POST", "/appointment/customer", tok, slotAt(drAna.ID, 9, 30), "Idempotency-Key", "lost-1")
	if r.status != 201 || appt["id"] == nil {
		t.Fatalf("the repeat: %d %s", r.status, r.body)
	}
	id := appt["id"].(string)
	if n := bot.AppointmentCount(); n != 1 {
		t.Fatalf("the EHR holds %d appointments, want 1", n)
	}
	// The patient reaches it, and its event was written once.
	r, list := s.ehrCall("GET", "/appointment", tok, "")
	if items, _ := list["items"].([]any); r.status != 200 || len(items) != 1 || items[0].(map[string]any)["id"] != id {
		t.Fatalf("the patient's listing: %d %s", r.status, r.body)
	}
	var events int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'appointment.booked'`).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d appointment.booked events (%v), want 1", events, err)
	}
	if r, _ := s.ehrCall("POST", "/appointment/customer", tok, slotAt(drAna.ID, 9, 30), "Idempotency-Key", "lost-1"); r.status != 201 || r.header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("a third repeat: %d %s", r.status, r.body)
	}
}

func TestBooking_LostAnswerWithoutAKeyIsReconciled(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) {
		c.EHR = integrationFile(t, "wsbot", bot.URL(), "")
		c.ReconcileEvery, c.ReconcileSettle = 50*time.Millisecond, 10*time.Millisecond
	})
	tok := w.scopedToken("pat-recon", "patient/Appointment.cus")
	bot.SetSilent("appointments.create", true)
	if a := s.call("POST", "/appointment/customer", tok, slotAt(drAna.ID, 9, 30)); a.err != nil || a.status != 504 {
		t.Fatalf("booking: %+v", a)
	}
	// A second booking of the same time: the first's hold keeps it until
	// it is settled, then the EHR's calendar does.
	bot.SetSilent("appointments.create", false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var holds, bookings int
		if err := w.db.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM booking_holds), (SELECT count(*) FROM appointment_bookings WHERE subject = 'pat-recon')`).Scan(&holds, &bookings); err != nil {
			t.Fatal(err)
		}
		if holds == 0 && bookings == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not reconciled: %d holds, %d bookings", holds, bookings)
		}
		time.Sleep(50 * time.Millisecond)
	}
	r, list := s.ehrCall("GET", "/appointment", tok, "")
	if items, _ := list["items"].([]any); r.status != 200 || len(items) != 1 {
		t.Fatalf("the patient's listing after the reconcile: %d %s", r.status, r.body)
	}
	var events int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM events WHERE type = 'appointment.booked'`).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d appointment.booked events (%v), want 1", events, err)
	}
	if a := s.call("POST", "/appointment/customer", tok, slotAt(drAna.ID, 9, 30)); a.err != nil || a.status != 409 || a.code != ehr.ErrAgentUnavailable.Code {
		t.Fatalf("the same time again: %+v", a)
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if v, ok := metricValue(page, `carebridge_bookings_reconciled_total{outcome="recorded"}`); !ok || v != 1 {
		t.Fatalf("bookings reconciled and recorded: %v (present %v), want 1", v, ok)
	}
}
