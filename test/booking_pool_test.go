package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
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

// percentile is the p-th percentile (0 < p ≤ 1) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	i := int(float64(len(sorted))*p+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func TestBooking_SlowEHRDoesNotStarveBusinessReads(t *testing.T) {
	const agents = 20
	ids := make([]string, agents)
	for i := range ids {
		ids[i] = fmt.Sprintf("dr-%02d", i)
	}
	w := newWorld(t)
	bot := slowEHR(t, 2*time.Second, ids...)
	// A main pool of 4 connections (what pgxpool gives a 2-core machine),
	// and the lock pool's defaults: 4 connections, a 5 s wait.
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

	// Reads from four goroutines for as long as bookings run.
	var mu sync.Mutex
	var reads []time.Duration
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
					reads = append(reads, a.took)
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	reading.Wait()

	if len(failed) > 0 {
		t.Fatalf("%d reads failed, the first: %+v", len(failed), failed[0])
	}
	slices.Sort(reads)
	p50, p99 := percentile(reads, 0.50), percentile(reads, 0.99)
	t.Logf("%d business reads during %d slow bookings: p50 %s, p99 %s, max %s", len(reads), agents, p50, p99, reads[len(reads)-1])
	if len(reads) < 100 {
		t.Fatalf("only %d reads", len(reads))
	}
	if p99 > 50*time.Millisecond {
		t.Errorf("reads p99 %s, want under 50ms", p99)
	}

	var booked, busy int
	for i, a := range bookings {
		switch {
		case a.err == nil && a.status == 201:
			booked++
		case a.err == nil && a.status == 503 && a.code == ehr.ErrBookingBusy.Code:
			busy++
		default:
			t.Errorf("booking of %s: %+v", ids[i], a)
		}
	}
	t.Logf("bookings: %d booked, %d %s", booked, busy, ehr.ErrBookingBusy.Code)
	if booked < 4 {
		t.Errorf("only %d bookings went through", booked)
	}
}

func TestBooking_SecondBookingOfABusyAgentAnswersAgentBusy(t *testing.T) {
	w := newWorld(t)
	bot := slowEHR(t, 2*time.Second, "dr-ana")
	s := w.start(func(c *app.Config) {
		c.EHR = integrationFile(t, "wsbot", bot.URL(), "")
		c.DatabaseURL = withParams(w.dbURL, "pool_lock_wait=1s")
	})
	tok := w.token("reception")

	first := make(chan answer, 1)
	go func() { first <- s.call("POST", "/appointment/customer", tok, slotAt("dr-ana", 9, 30)) }()
	// The first booking holds the agent's advisory lock (for the 4 s of its
	// two slow EHR calls) once the database shows it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		// pg_locks is the whole server's (other tests' databases, this
		// app's own jobs): count only the agent's lock, in this database.
		if err := w.db.QueryRow(context.Background(), `
			SELECT count(*) FROM pg_locks
			WHERE locktype = 'advisory' AND granted AND objsubid = 1
			  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
			  AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('agent:dr-ana', 0)`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first booking never took its lock")
		}
		time.Sleep(10 * time.Millisecond)
	}

	second := s.call("POST", "/appointment/customer", tok, slotAt("dr-ana", 11, 30))
	if second.err != nil || second.status != 409 || second.code != ehr.ErrAgentBusy.Code {
		t.Fatalf("second booking: %+v", second)
	}
	if second.took < time.Second || second.took > 3*time.Second {
		t.Fatalf("the second booking answered after %s, with a lock wait of 1s", second.took)
	}
	t.Logf("second booking answered %d %s after %s", second.status, second.code, second.took)
	if a := <-first; a.err != nil || a.status != 201 {
		t.Fatalf("first booking: %+v", a)
	}
	// Once the first is done the agent may be booked again.
	if a := s.call("POST", "/appointment/customer", tok, slotAt("dr-ana", 11, 30)); a.err != nil || a.status != 201 {
		t.Fatalf("booking after the first: %+v", a)
	}
}
