package test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
	"github.com/carebridge/carebridge/test/logtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// EHR sync and clocks (issue 30): one appointment whose EHR time says 2099
// used to move the sync watermark to 2099, and no later change of that EHR
// was ever published, without an error.

// year2099 is an EHR time no clock vouches for.
var year2099 = time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)

// leaseLeft is how long the running lease of system has left, by the
// database's clock.
func (sw *syncWorld) leaseLeft(system string) time.Duration {
	sw.t.Helper()
	var secs float64
	err := sw.db.QueryRow(context.Background(),
		`SELECT EXTRACT(EPOCH FROM lease_until - now())::float8 FROM ehr_sync_cursors WHERE system = $1`, system).Scan(&secs)
	if err != nil {
		sw.t.Fatal(err)
	}
	return time.Duration(secs * float64(time.Second))
}

// watermark is system's stored watermark.
func (sw *syncWorld) watermark(system string) time.Time {
	sw.t.Helper()
	var w *time.Time
	if err := sw.db.QueryRow(context.Background(), `SELECT watermark FROM ehr_sync_cursors WHERE system = $1`, system).Scan(&w); err != nil {
		sw.t.Fatal(err)
	}
	if w == nil {
		return time.Time{}
	}
	return *w
}

// A bot (which does not tell its clock) holds an appointment stamped 2099:
// it is published once, counted and logged without patient data, the
// watermark stays by this instance's clock, and the changes made after it
// are published as ever. The lease follows the poll interval.
func TestSync_AnAppointmentDated2099DoesNotStopTheSync(t *testing.T) {
	sw := newSyncWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	logs := &logtest.Buffer{}
	s := sw.startLogging(logs, sw.syncConfig(integrationFile(t, "wsbot", bot.URL(), ""), 0))
	sw.waitBaseline("peer")
	if left := sw.leaseLeft("peer"); left > syncEvery+time.Minute || left <= 0 {
		t.Errorf("the lease has %v left; want at most the interval plus a minute (%v)", left, syncEvery+time.Minute)
	}

	marker := "Zq" + rand.Text() // the odd appointment's patient: never in a log
	oddStart := at(t, 8, 0)
	odd := bot.AddAppointment(ehr.Appointment{AgentID: "dr-ana", Start: oddStart, End: oddStart.Add(30 * time.Minute), Reason: "imported",
		LocationID: "main", Patient: ehr.PatientContact{FirstName: marker, LastName: marker, DateOfBirth: "1979-11-23", Email: strings.ToLower(marker) + "@example.com"}})
	bot.StampAppointment(odd, year2099)
	sw.waitEvent(odd, "appointment.booked")

	later, start, end := frontDesk(t, bot, 10)
	sw.waitEvent(later, "appointment.booked")
	bot.SetAppointmentStatus(later, "checked_in")
	sw.waitEvent(later, "appointment.status_changed")
	if w := sw.watermark("peer"); !w.Before(time.Now().Add(2 * time.Minute)) {
		t.Errorf("watermark %s: past this instance's clock plus a minute", w)
	}
	if st, ok := s.readySync("peer"); !ok || st.Watermark == nil || strings.HasPrefix(*st.Watermark, "2099") {
		t.Errorf("readyz sync detail %+v (present %v)", st, ok)
	}
	checkReceived(t, "2099", sw.rc, sw.secret, []want{
		ehrEvent("appointment.booked", odd, "booked", oddStart, oddStart.Add(30*time.Minute)),
		ehrEvent("appointment.booked", later, "booked", start, end),
		ehrEvent("appointment.status_changed", later, "checked_in", start, end),
	})

	if v := s.metric(`carebridge_ehr_sync_clock_anomalies_total{ehr="peer",kind="change"}`); v != 1 {
		t.Errorf("clock anomalies counted %v, want 1 (the odd change, once)", v)
	}
	out := logs.String()
	if !strings.Contains(out, "dated past the EHR's clock") || !strings.Contains(out, "2099-01-01T00:00:00Z") {
		t.Errorf("no log line tells the odd time:\n%s", out)
	}
	for _, secret := range []string{marker, strings.ToLower(marker), "1979-11-23"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds patient data %q", secret)
		}
	}
}

// The same against a real FHIR server (Medplum), which tells its clock
// (its HTTP Date): an Appointment whose meta.lastUpdated says 2099 does not
// keep the changes made after it from being published.
func TestIntegrationSync_AFHIRAppointmentDated2099DoesNotStopTheSync(t *testing.T) {
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

	oddStart, oddEnd := at(t, 8, 0), at(t, 8, 30)
	res := medplumAppointment(agent, oddStart, oddEnd)
	res["meta"] = map[string]any{"versionId": "1", "lastUpdated": year2099.Format("2006-01-02T15:04:05.000Z")}
	odd := peer.Seed(t, res)["id"].(string)
	sw.waitEvent(odd, "appointment.booked")

	start, end := at(t, 11, 0), at(t, 11, 30)
	created := peer.Create(t, medplumAppointment(agent, start, end))
	later := created["id"].(string)
	sw.waitEvent(later, "appointment.booked")
	created["status"] = "arrived"
	peer.Update(t, created)
	sw.waitEvent(later, "appointment.status_changed")

	if w := sw.watermark("peer"); !w.Before(time.Now().Add(2 * time.Minute)) {
		t.Errorf("watermark %s: past the EHR's clock", w)
	}
	checkReceived(t, "fhir 2099", sw.rc, sw.secret, []want{
		wantEvent("appointment.booked", odd, "booked", oddStart, oddEnd),
		wantEvent("appointment.booked", later, "booked", start, end),
		wantEvent("appointment.status_changed", later, "checked_in", start, end),
	})
	if v := s.metric(`carebridge_ehr_sync_clock_anomalies_total{ehr="peer",kind="change"}`); v != 1 {
		t.Errorf("clock anomalies counted %v, want 1", v)
	}
}
