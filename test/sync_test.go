package test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrsystems"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
	"github.com/carebridge/carebridge/test/logtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// EHR sync end to end (issue 21): changes made directly in a fake EHR
// (its own screens) reach a webhook receiver as events with origin ehr.

// syncEvery is the poll interval of these tests (ehrsystems.SyncTuning).
const syncEvery = 200 * time.Millisecond

// syncWait bounds every wait for a poll's outcome: generous, as the EHR
// link may be in its reconnection backoff (up to 10 s) after an outage.
const syncWait = 60 * time.Second

// syncWorld is a world whose apps deliver every event to one receiver.
type syncWorld struct {
	*world
	h      *hooks
	rc     *receiver
	secret string
}

func newSyncWorld(t *testing.T) *syncWorld {
	w := newWorld(t)
	sw := &syncWorld{world: w, h: newHooks(w), rc: newReceiver(t, nil)}
	_, sw.secret = sw.h.add(sw.rc.url(), "*")
	return sw
}

// syncConfig makes c an app over cfg polling every syncEvery, its lease
// lasting lease.
func (sw *syncWorld) syncConfig(cfg *ehrconfig.Config, lease time.Duration) func(*app.Config) {
	return func(c *app.Config) {
		c.EHR = cfg
		sw.h.configure(c)
		c.Sync = ehrsystems.SyncTuning{Interval: syncEvery, Lease: lease}
	}
}

// startSync starts an app over cfg that polls every syncEvery.
func (sw *syncWorld) startSync(cfg *ehrconfig.Config) *server {
	sw.t.Helper()
	return sw.start(sw.syncConfig(cfg, 0))
}

// waitBaseline waits until the first sweep of system is done: from then
// on every change is published.
func (sw *syncWorld) waitBaseline(system string) {
	sw.t.Helper()
	eventually(sw.t, syncWait, "the baseline of "+system, func() bool {
		var done bool
		err := sw.db.QueryRow(context.Background(), `SELECT baselined FROM ehr_sync_cursors WHERE system = $1`, system).Scan(&done)
		return err == nil && done
	})
}

// eventsOf are the events the receiver took of appointment id.
func (sw *syncWorld) eventsOf(id string) []eventJSON {
	var out []eventJSON
	for _, d := range sw.rc.events() {
		if d.ev.Data["appointmentId"] == id {
			out = append(out, d.ev)
		}
	}
	return out
}

// waitEvent waits for an event of type typ of appointment id.
func (sw *syncWorld) waitEvent(id, typ string) {
	sw.t.Helper()
	eventually(sw.t, syncWait, typ+" of "+id, func() bool {
		for _, ev := range sw.eventsOf(id) {
			if ev.Type == typ {
				return true
			}
		}
		return false
	})
}

// ehrEvent is the event of a change made in the EHR.
func ehrEvent(typ, id, status string, start, end time.Time) want {
	return want{typ, "", map[string]any{"appointmentId": id, "agentId": "dr-ana", "status": status, "start": start, "end": end, "origin": "ehr"}}
}

// at is timeAt as a time.
func at(t *testing.T, hour, minute int) time.Time {
	v, err := time.Parse(time.RFC3339, timeAt(hour, minute))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// frontDesk books dr-ana from hour:00 for 30 minutes directly in the bot.
func frontDesk(t *testing.T, bot *wsbottest.Server, hour int) (string, time.Time, time.Time) {
	start := at(t, hour, 0)
	end := start.Add(30 * time.Minute)
	id := bot.AddAppointment(ehr.Appointment{AgentID: "dr-ana", Start: start, End: end, Reason: "front desk", LocationID: "main",
		Patient: ehr.PatientContact{FirstName: "Bo", LastName: "Chen", DateOfBirth: "1985-07-01", Email: "bo@example.com"}})
	return id, start, end
}

// readySync is the sync detail of /readyz.
type readySync struct {
	EHR        string  `json:"ehr"`
	LagSeconds float64 `json:"lagSeconds"`
	Watermark  *string `json:"watermark"`
	LastPollAt *string `json:"lastPollAt"`
	LastError  *string `json:"lastError"`
}

// readySync reads /readyz, which must answer 200, and returns its detail of
// system.
func (s *server) readySync(system string) (readySync, bool) {
	s.t.Helper()
	r := s.do("GET", "/readyz", "", nil)
	var body struct {
		Status string      `json:"status"`
		Sync   []readySync `json:"sync"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &body) != nil || body.Status != "ready" {
		s.t.Fatalf("readyz: %d %s", r.status, r.body)
	}
	for _, st := range body.Sync {
		if st.EHR == system {
			return st, true
		}
	}
	return readySync{}, false
}

// metric reads one series of /metrics.
func (s *server) metric(series string) float64 {
	s.t.Helper()
	v, _ := metricValue(string(s.do("GET", "/metrics", "", nil).body), series)
	return v
}

// Changes made at the front desk — a booking, an arrival, a move, a
// cancellation — each become exactly one webhook with origin ehr, once the
// baseline (which publishes nothing of what was there before) is done; a
// reload that rebuilds the system keeps it polled.
func TestSync_EHRChangesBecomeOneWebhookEach(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	before, bStart, bEnd := frontDesk(t, bot, 8)
	s := sw.startSync(integrationFile(t, "wsbot", bot.URL(), ""))
	sw.waitBaseline("peer")

	id, start, end := frontDesk(t, bot, 9)
	sw.waitEvent(id, "appointment.booked")
	bot.SetAppointmentStatus(id, "checked_in")
	sw.waitEvent(id, "appointment.status_changed")
	moved := bStart.Add(3 * time.Hour)
	bot.MoveAppointment(before, moved, moved.Add(bEnd.Sub(bStart)))
	sw.waitEvent(before, "appointment.rescheduled")
	bot.SetAppointmentStatus(before, "cancelled")
	sw.waitEvent(before, "appointment.cancelled")

	// A reload that changes the system's configuration rebuilds it: its
	// new poller goes on from the watermark.
	if err := s.app.ReloadEHR(integrationFile(t, "wsbot", bot.URL(), "    retry_attempts: 2\n")); err != nil {
		t.Fatal(err)
	}
	after, aStart, aEnd := frontDesk(t, bot, 13)
	sw.waitEvent(after, "appointment.booked")
	if st, ok := s.readySync("peer"); !ok || st.LastError != nil || st.Watermark == nil || st.LastPollAt == nil {
		t.Errorf("readyz sync detail %+v (present %v)", st, ok)
	}

	checkReceived(t, "front desk", sw.rc, sw.secret, []want{
		ehrEvent("appointment.booked", id, "booked", start, end),
		ehrEvent("appointment.status_changed", id, "checked_in", start, end),
		ehrEvent("appointment.rescheduled", before, "booked", moved, moved.Add(bEnd.Sub(bStart))),
		ehrEvent("appointment.cancelled", before, "cancelled", moved, moved.Add(bEnd.Sub(bStart))),
		ehrEvent("appointment.booked", after, "booked", aStart, aEnd),
	})
	if v := s.metric(`carebridge_ehr_sync_changes_total{ehr="peer",kind="booked"}`); v != 2 {
		t.Errorf("booked changes counted %v, want 2", v)
	}
	if v := s.metric(`carebridge_ehr_sync_changes_total{ehr="peer",kind="baseline"}`); v != 1 {
		t.Errorf("baseline changes counted %v, want 1", v)
	}

	// A reload that removes the system stops its poller and its series.
	if err := s.app.ReloadEHR(nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, syncWait, "the removed system gone from /readyz", func() bool {
		_, ok := s.readySync("peer")
		return !ok
	})
	if page := string(s.do("GET", "/metrics", "", nil).body); strings.Contains(page, `carebridge_ehr_sync_changes_total{ehr="peer"`) {
		t.Error("the removed system's series remain")
	}
}

// A booking, a move and a cancellation made through the API publish their
// api events and nothing more: the poller, which reads them back from the
// EHR, knows them.
func TestSync_APIChangesArePublishedOnce(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := sw.startSync(integrationFile(t, "wsbot", bot.URL(), ""))
	sw.waitBaseline("peer")
	staff := sw.token("reception")

	r, appt := s.ehrCall("POST", "/appointment/customer", staff, slotAt("dr-ana", 9, 30), "Idempotency-Key", "sync-1")
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	id := appt["id"].(string)
	sw.waitEvent(id, "appointment.booked")
	// The bot holds its answers to a move and a cancellation after making
	// them, past a few polls: the poller reads each change in the EHR
	// before the API path commits it.
	bot.SetLateAnswer("appointments.reschedule", 5*syncEvery)
	bot.SetLateAnswer("appointments.cancel", 5*syncEvery)
	if r, _ := s.ehrCall("POST", "/appointment/"+id+"/reschedule", staff, fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(10, 0), timeAt(10, 30))); r.status != 200 {
		t.Fatalf("reschedule: %d %s", r.status, r.body)
	}
	sw.waitEvent(id, "appointment.rescheduled")
	if r, _ := s.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", staff, `{"reason":"better"}`); r.status != 200 {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	sw.waitEvent(id, "appointment.cancelled")

	// A change made in the EHR after them: once its event is in, the
	// poller has read the API's changes back too.
	marker, mStart, mEnd := frontDesk(t, bot, 14)
	sw.waitEvent(marker, "appointment.booked")
	// Each is told once, with origin api, even when the poller reads it
	// in the EHR between the EHR's answer and the API's commit: a booking
	// carries our reference, a move or a cancel its intent.
	api := func(typ, status string, start, end time.Time) want {
		return want{typ, "", map[string]any{"appointmentId": id, "agentId": "dr-ana", "status": status, "start": start, "end": end, "origin": "api"}}
	}
	checkReceived(t, "api", sw.rc, sw.secret, []want{
		api("appointment.booked", "booked", at(t, 9, 0), at(t, 9, 30)),
		api("appointment.rescheduled", "booked", at(t, 10, 0), at(t, 10, 30)),
		api("appointment.cancelled", "cancelled", at(t, 10, 0), at(t, 10, 30)),
		ehrEvent("appointment.booked", marker, "booked", mStart, mEnd),
	})
}

// Two instances poll the same EHR: each change is one event.
func TestSync_TwoInstancesPublishEachChangeOnce(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	cfg := integrationFile(t, "wsbot", bot.URL(), "")
	first := sw.start(sw.syncConfig(cfg, time.Second))
	second := sw.start(sw.syncConfig(cfg, time.Second))
	sw.waitBaseline("peer")

	var wants []want
	for i, hour := range []int{9, 10, 11, 12} {
		id, start, end := frontDesk(t, bot, hour)
		sw.waitEvent(id, "appointment.booked")
		wants = append(wants, ehrEvent("appointment.booked", id, "booked", start, end))
		if i == 1 {
			first.stop() // the other takes over once the lease runs out
		}
	}
	checkReceived(t, "two instances", sw.rc, sw.secret, wants)
	if _, ok := second.readySync("peer"); !ok {
		t.Error("readyz of the second instance shows no sync detail")
	}
}

// A batch whose transaction fails after the changes were read (the outbox
// refuses the event) and an instance killed while it reads the changes
// lose and double nothing: the watermark moves only with the events.
func TestSync_ACrashBeforeTheCommitLosesAndDoublesNothing(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	cfg := integrationFile(t, "wsbot", bot.URL(), "")
	s := sw.start(sw.syncConfig(cfg, time.Second))
	sw.waitBaseline("peer")

	// The outbox fails while the flag table has a row.
	ctx := context.Background()
	for _, q := range []string{
		`CREATE TABLE sync_test_fail (x int)`,
		`CREATE FUNCTION sync_test_fail() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF EXISTS (SELECT 1 FROM sync_test_fail) THEN RAISE EXCEPTION 'injected outbox failure'; END IF; RETURN NEW; END $$`,
		`CREATE TRIGGER sync_test_fail BEFORE INSERT ON events FOR EACH ROW EXECUTE FUNCTION sync_test_fail()`,
		`INSERT INTO sync_test_fail VALUES (1)`,
	} {
		if _, err := sw.db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	failures := func() float64 { return s.metric(`carebridge_ehr_sync_poll_failures_total{code="internal",ehr="peer"}`) }
	id, start, end := frontDesk(t, bot, 9)
	eventually(t, syncWait, "polls failing at the outbox", func() bool { return failures() >= 2 })
	if got := sw.eventsOf(id); len(got) != 0 {
		t.Fatalf("events of a failed batch: %v", got)
	}
	if _, err := sw.db.Exec(ctx, `DELETE FROM sync_test_fail`); err != nil {
		t.Fatal(err)
	}
	sw.waitEvent(id, "appointment.booked")

	// Killed while it reads the changes: the bot stops answering them, a
	// poll is waiting for its answer when the change is made, and the
	// instance is stopped; the next instance publishes the change.
	bot.SetSilent("appointments.changes", true)
	asked := bot.Requests()
	eventually(t, syncWait, "a poll waiting for the bot", func() bool { return bot.Requests() > asked })
	killed, kStart, kEnd := frontDesk(t, bot, 10)
	s.stop()
	bot.SetSilent("appointments.changes", false)
	sw.start(sw.syncConfig(cfg, time.Second))
	sw.waitEvent(killed, "appointment.booked")
	marker, mStart, mEnd := frontDesk(t, bot, 11)
	sw.waitEvent(marker, "appointment.booked")

	checkReceived(t, "crash", sw.rc, sw.secret, []want{
		ehrEvent("appointment.booked", id, "booked", start, end),
		ehrEvent("appointment.booked", killed, "booked", kStart, kEnd),
		ehrEvent("appointment.booked", marker, "booked", mStart, mEnd),
	})
}

// An EHR down for a while: polls fail, /readyz stays ready and shows the
// error and a growing lag, as /metrics does; when the EHR returns, the
// poller catches up from its watermark with the changes made meanwhile.
func TestSync_AnEHRDownCatchesUpWhenItReturns(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := sw.startSync(integrationFile(t, "wsbot", bot.URL(), ""))
	sw.waitBaseline("peer")
	early, eStart, eEnd := frontDesk(t, bot, 8)
	sw.waitEvent(early, "appointment.booked")

	bot.SetAuthorization("Bearer somebody-else") // the link is refused from now on
	bot.DropAll()
	booked, bStart, bEnd := frontDesk(t, bot, 9)
	moved := eStart.Add(2 * time.Hour)
	bot.MoveAppointment(early, moved, moved.Add(eEnd.Sub(eStart)))
	eventually(t, syncWait, "readyz shows the error and a lag of a second", func() bool {
		st, ok := s.readySync("peer")
		return ok && st.LastError != nil && st.LagSeconds >= 1
	})
	if v := s.metric(`carebridge_ehr_sync_lag_seconds{ehr="peer"}`); v < 0.5 {
		t.Errorf("lag gauge %v while the EHR is down", v)
	}
	page := string(s.do("GET", "/metrics", "", nil).body)
	if !strings.Contains(page, `carebridge_ehr_sync_poll_failures_total{code=`) {
		t.Error("no poll failure counted")
	}
	if got := sw.eventsOf(booked); len(got) != 0 {
		t.Fatalf("events while the EHR is down: %v", got)
	}

	bot.SetAuthorization("")
	sw.waitEvent(booked, "appointment.booked")
	sw.waitEvent(early, "appointment.rescheduled")
	eventually(t, syncWait, "readyz shows the sync caught up", func() bool {
		st, ok := s.readySync("peer")
		return ok && st.LastError == nil && st.LagSeconds < 1
	})
	checkReceived(t, "outage", sw.rc, sw.secret, []want{
		ehrEvent("appointment.booked", early, "booked", eStart, eEnd),
		ehrEvent("appointment.booked", booked, "booked", bStart, bEnd),
		ehrEvent("appointment.rescheduled", early, "booked", moved, moved.Add(eEnd.Sub(eStart))),
	})
}

// A bot without appointments.changes: the poller logs it once and stops;
// the rest of the service works on.
func TestSync_ABotWithoutChangesIsLoggedOnceAndSkipped(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t, wsbottest.WithoutChanges())
	bot.AddAgent(drAna, workdays(5))
	logs := &logtest.Buffer{}
	s := sw.startLogging(logs, sw.syncConfig(integrationFile(t, "wsbot", bot.URL(), ""), 0))
	const said = "cannot tell its appointment changes"
	eventually(t, syncWait, "the poller says the EHR cannot tell its changes", func() bool { return strings.Contains(logs.String(), said) })
	st, ok := s.readySync("peer")
	if !ok || st.LastError == nil || *st.LastError != "changes_not_supported" {
		t.Errorf("readyz sync detail %+v (present %v)", st, ok)
	}

	asked := bot.Requests()
	time.Sleep(5 * syncEvery) // five ticks of a poller that would still run
	if n := bot.Requests(); n != asked {
		t.Errorf("%d more requests to the bot after it said it cannot tell its changes", n-asked)
	}
	if n := strings.Count(logs.String(), said); n != 1 {
		t.Errorf("said %d times", n)
	}
	if v := s.metric(`carebridge_ehr_sync_poll_failures_total{code="changes_not_supported",ehr="peer"}`); v != 1 {
		t.Errorf("failures counted %v, want 1", v)
	}
	r, _ := s.ehrCall("POST", "/appointment/customer", sw.token("reception"), slotAt("dr-ana", 9, 30))
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
}

// medplumAppointment is a booked Appointment as a front desk makes it in
// the FHIR server: the practitioner and a contained patient.
func medplumAppointment(agentID string, start, end time.Time) map[string]any {
	return map[string]any{
		"resourceType": "Appointment", "status": "booked", "description": "front desk",
		"start": start.UTC().Format(time.RFC3339), "end": end.UTC().Format(time.RFC3339),
		"contained": []any{map[string]any{"resourceType": "Patient", "id": "p",
			"name": []any{map[string]any{"family": "Chen", "given": []any{"Bo"}}}, "birthDate": "1985-07-01"}},
		"participant": []any{
			map[string]any{"actor": map[string]any{"reference": "Practitioner/" + agentID}, "status": "accepted"},
			map[string]any{"actor": map[string]any{"reference": "#p"}, "status": "accepted"},
		},
	}
}

// The same against a real FHIR server (Medplum): a booking, an arrival and
// a cancellation made directly in the server become one event each, and a
// booking through the API only its own.
func TestIntegrationSync_FHIRChangesBecomeOneWebhookEach(t *testing.T) {
	sw := newSyncWorld(t)
	peer := fhirtest.Start(t, fhirtest.WithAPIKey("s3cret"))
	agent := peer.AddAgent(t, drAna, workdays(5))
	s := sw.startSync(integrationFile(t, "fhir", peer.URL(), "    authentication: { type: api_key, api_key: \"env:PEER_SECRET\" }\n"))
	sw.waitBaseline("peer")
	wantEvent := func(typ, id, status string, start, end time.Time) want {
		wt := ehrEvent(typ, id, status, start, end)
		wt.data["agentId"] = agent
		return wt
	}

	r, appt := s.ehrCall("POST", "/appointment/customer", sw.token("reception"), slotAt(agent, 9, 30))
	if r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	start, end := at(t, 11, 0), at(t, 11, 30)
	res := peer.Create(t, medplumAppointment(agent, start, end))
	id := res["id"].(string)
	sw.waitEvent(id, "appointment.booked")
	res["status"] = "arrived"
	res = peer.Update(t, res)
	sw.waitEvent(id, "appointment.status_changed")
	res["status"] = "cancelled"
	peer.Update(t, res)
	sw.waitEvent(id, "appointment.cancelled")

	apiBooked := wantEvent("appointment.booked", appt["id"].(string), "booked", at(t, 9, 0), at(t, 9, 30))
	apiBooked.data["origin"] = "api"
	checkReceived(t, "fhir", sw.rc, sw.secret, []want{
		apiBooked,
		wantEvent("appointment.booked", id, "booked", start, end),
		wantEvent("appointment.status_changed", id, "checked_in", start, end),
		wantEvent("appointment.cancelled", id, "cancelled", start, end),
	})
}
