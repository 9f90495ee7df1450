package test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// Bookings and their EHR system (issue 30): one agent's time is one
// calendar per EHR, whichever practice books it, and what a booking
// recorded is read, changed and replayed in the EHR that holds it.

// bookingGate is a front of a FHIR server (base) that holds the first
// booking (POST …/Appointment) until release is closed; held is closed
// once it is held.
type bookingGate struct {
	base    string
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func newBookingGate(t *testing.T, peer *fhirtest.Server) *bookingGate {
	t.Helper()
	g := &bookingGate{held: make(chan struct{}), release: make(chan struct{})}
	g.base = peer.Front(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/Appointment") {
			first := false
			g.once.Do(func() { first = true })
			if first {
				close(g.held)
				select {
				case <-g.release:
				case <-r.Context().Done():
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
	return g
}

// sharedEHRFile is a multi-practice EHR systems file whose integration EHR,
// shared (FHIR at base), serves every business; a second system bound to
// business a makes the deployment multi-practice.
func sharedEHRFile(t *testing.T, base, a string) *ehrconfig.Config {
	t.Helper()
	sys := func(name, extra string) string {
		return fmt.Sprintf("  - name: %s\n    adapter: fhir\n    base_url: %s\n    authentication: { type: api_key, api_key: \"env:PEER_SECRET\" }\n    timeout: 10000\n    sync: { interval: 0s }\n%s",
			name, base, extra)
	}
	yaml := "ehr_systems:\n" + sys("shared", "") + sys("records-a", "    businesses: ["+a+"]\n") + "integration:\n  ehr: shared\n"
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, func(k string) string { return map[string]string{"PEER_SECRET": "s3cret"}[k] })
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, yaml)
	}
	return cfg
}

// Reproduced from outside: two patients acting for two practices that
// share one EHR book one agent's slot at once. The FHIR server, as most
// do, books whatever it is sent: only Carebridge can keep the agent's
// time once. The first booking is held at the EHR's door while the second
// is made, so the second always finds the agent free in the EHR.
func TestBookings_OneAgentsTimeIsHeldOncePerEHRWhicheverPracticeBooks(t *testing.T) {
	w := newWorld(t)
	peer := fhirtest.Start(t, fhirtest.WithAPIKey("s3cret"))
	agent := peer.AddAgent(t, drAna, workdays(5))
	gate := newBookingGate(t, peer)
	a, b := w.createBusiness("owner-a"), w.createBusiness("owner-b")
	s := w.start(func(c *app.Config) {
		c.EHR, c.SearchRateLimit = sharedEHRFile(t, gate.base, a), 1000
	})
	pa, pb := w.scopedToken("pat-a", "patient/Appointment.cus"), w.scopedToken("pat-b", "patient/Appointment.cus")

	first := make(chan answer, 1)
	go func() { first <- s.call("POST", "/appointment/customer", pa, slotAt(agent, 9, 30), "X-Business-Id", a) }()
	select {
	case <-gate.held:
	case got := <-first:
		t.Fatalf("the first booking ended before it reached the EHR: %+v", got)
	}
	second := s.call("POST", "/appointment/customer", pb, slotAt(agent, 9, 30), "X-Business-Id", b)
	close(gate.release)
	got := <-first
	if got.err != nil || second.err != nil {
		t.Fatalf("requests failed: %v / %v", got.err, second.err)
	}
	if got.status != 201 || second.status != 409 || second.code != "agent_busy" {
		t.Errorf("the first booking (practice A): %d %s; the second (practice B) at once: %d %s; want 201 and 409 agent_busy",
			got.status, got.code, second.status, second.code)
	}
	_, bundle := peer.Get(t, "Appointment?actor=Practitioner/"+agent+"&status=booked")
	if entries, _ := bundle["entry"].([]any); len(entries) != 1 {
		t.Fatalf("the EHR holds %d booked appointments of the agent; want 1", len(entries))
	}
}

// botsFile is a single-practice EHR systems file of the bots given (name →
// URL), integration being the integration EHR.
func botsFile(t *testing.T, integration string, bots map[string]string) *ehrconfig.Config {
	t.Helper()
	var b strings.Builder
	b.WriteString("ehr_systems:\n")
	for _, name := range []string{"one", "two"} {
		if u, ok := bots[name]; ok {
			fmt.Fprintf(&b, "  - name: %s\n    adapter: wsbot\n    base_url: %s\n    timeout: 3000\n    sync: { interval: 0s }\n", name, u)
		}
	}
	fmt.Fprintf(&b, "integration:\n  ehr: %s\n", integration)
	cfg, err := ehrkinds.All().Parse([]byte(b.String()), nil, func(string) string { return "" })
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, b.String())
	}
	return cfg
}

// Reproduced from outside: an operator moves the integration EHR from bot
// one to bot two (SIGHUP), and bot two holds an appointment of another
// patient under the very id of one of this patient's bookings. The
// patient's listing, replay, cancel and reschedule reach bot one, never
// bot two; once bot one is gone from the file, they fail closed.
func TestBookings_FollowTheirEHRSystemAcrossAReload(t *testing.T) {
	w := newWorld(t)
	one, two := wsbottest.Start(t), wsbottest.Start(t)
	one.AddAgent(drAna, workdays(5))
	two.AddAgent(drAna, workdays(5))
	urls := map[string]string{"one": one.URL(), "two": two.URL()}
	s := w.start(func(c *app.Config) { c.EHR, c.SearchRateLimit = botsFile(t, "one", urls), 1000 })
	pat := w.scopedToken("pat", "patient/Appointment.cus")
	staff := w.token("desk")

	r, first := s.ehrCall("POST", "/appointment/customer", pat, slotAt("dr-ana", 9, 30), "Idempotency-Key", "reload-k1")
	if r.status != 201 {
		t.Fatalf("book in one: %d %s", r.status, r.body)
	}
	r, second := s.ehrCall("POST", "/appointment/customer", pat, slotAt("dr-ana", 11, 30))
	if r.status != 201 {
		t.Fatalf("book in one: %d %s", r.status, r.body)
	}
	id := first["id"].(string)
	const marker = "Zqxothermarker"
	start, _ := time.Parse(time.RFC3339, timeAt(14, 0))
	if got := two.AddAppointment(ehr.Appointment{AgentID: "dr-ana", Start: start, End: start.Add(30 * time.Minute), Reason: "front desk",
		Patient: ehr.PatientContact{FirstName: "Zed", LastName: marker, DateOfBirth: "1950-01-01", Email: "zed@example.com"}}); got != id {
		t.Fatalf("fixture: bot two's appointment is %s, not %s", got, id)
	}

	if err := s.app.ReloadEHR(botsFile(t, "two", urls)); err != nil {
		t.Fatal(err)
	}
	r, page := s.ehrCall("GET", "/appointment", pat, "")
	if r.status != 200 || page["totalCount"] != 2.0 || strings.Contains(string(r.body), marker) {
		t.Fatalf("the patient's listing after the reload: %d %s; want its two bookings of bot one", r.status, r.body)
	}
	r, again := s.ehrCall("POST", "/appointment/customer", pat, slotAt("dr-ana", 9, 30), "Idempotency-Key", "reload-k1")
	if r.status != 201 || again["id"] != id || again["source"] != "one" || strings.Contains(string(r.body), marker) {
		t.Fatalf("the replay after the reload: %d %s; want bot one's appointment", r.status, r.body)
	}
	r, cancelled := s.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", pat, `{}`)
	if r.status != 200 || cancelled["source"] != "one" || cancelled["status"] != "cancelled" {
		t.Fatalf("cancel after the reload: %d %s; want bot one's appointment cancelled", r.status, r.body)
	}
	if st, _ := one.AppointmentStatus(id); st != "cancelled" {
		t.Fatalf("bot one's %s is %q", id, st)
	}
	if st, _ := two.AppointmentStatus(id); st != "booked" {
		t.Fatalf("bot two's %s (another patient's) is %q; the patient's cancel reached it", id, st)
	}
	moved := fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(15, 0), timeAt(15, 30))
	if r, a := s.ehrCall("POST", "/appointment/"+second["id"].(string)+"/reschedule", pat, moved); r.status != 200 || a["source"] != "one" {
		t.Fatalf("reschedule after the reload: %d %s", r.status, r.body)
	}
	if r, list := s.ehrCall("GET", "/appointment", staff, ""); r.status != 200 || list["totalCount"] != 1.0 || !strings.Contains(string(r.body), marker) {
		t.Fatalf("staff list the integration EHR in force, bot two: %d %s", r.status, r.body)
	}

	// Bot one is gone from the file: what it holds is not asked of bot two.
	if err := s.app.ReloadEHR(botsFile(t, "two", map[string]string{"two": two.URL()})); err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]response{
		"listing": s.do("GET", "/appointment", pat, nil),
		"cancel":  s.do("PUT", "/appointment/customer/"+second["id"].(string)+"/cancel", pat, strings.NewReader(`{}`), "Content-Type", "application/json"),
		"replay": s.do("POST", "/appointment/customer", pat, strings.NewReader(slotAt("dr-ana", 9, 30)),
			"Content-Type", "application/json", "Idempotency-Key", "reload-k1"),
	} {
		if r.status != 503 || r.errorCode(t) != "ehr_system_not_configured" || strings.Contains(string(r.body), marker) {
			t.Errorf("%s once bot one is gone: %d %s; want 503 ehr_system_not_configured", what, r.status, r.body)
		}
	}
	if st, _ := two.AppointmentStatus(id); st != "booked" {
		t.Fatalf("bot two's %s is %q", id, st)
	}
	var n int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM appointment_bookings WHERE subject = 'pat'`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("%d bookings recorded: %v", n, err)
	}
}
