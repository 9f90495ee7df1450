package test

import (
	"fmt"
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

// workday is the agent's free time on the next n days, 08:00 to 18:00 in
// Chicago.
func workdays(n int) []ehr.Period {
	loc, _ := time.LoadLocation("America/Chicago")
	now := time.Now().In(loc)
	var free []ehr.Period
	for d := 1; d <= n; d++ {
		day := time.Date(now.Year(), now.Month(), now.Day()+d, 0, 0, 0, 0, loc)
		free = append(free, ehr.Period{Start: day.Add(8 * time.Hour), End: day.Add(18 * time.Hour)})
	}
	return free
}

var drAna = ehr.Agent{ID: "dr-ana", FirstName: "Ana", LastName: "Lopez", Name: "Dr. Ana Lopez", Specialty: "Cardiology",
	Email: "ana@clinic.example", Timezone: "America/Chicago", LocationIDs: []string{"main"}}

func integrationFile(t *testing.T, adapter, url string, auth string) *ehrconfig.Config {
	t.Helper()
	yaml := fmt.Sprintf("ehr_systems:\n  - name: peer\n    adapter: %s\n    base_url: %s\n%s    timeout: 3000\nintegration:\n  ehr: peer\n", adapter, url, auth)
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, func(k string) string { return map[string]string{"PEER_SECRET": "s3cret"}[k] })
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, yaml)
	}
	return cfg
}

// slotAt is a booking body for the agent at hour on the day after tomorrow.
func slotAt(agent string, hour, minutes int) string {
	loc, _ := time.LoadLocation("America/Chicago")
	now := time.Now().In(loc)
	start := time.Date(now.Year(), now.Month(), now.Day()+2, hour, 0, 0, 0, loc)
	return fmt.Sprintf(`{"agentId":%q,"start":%q,"durationMinutes":%d,"reason":"check-up","locationId":"main",
		"patient":{"firstName":"Bo","lastName":"Chen","dateOfBirth":"1985-07-01","email":"bo@example.com","phone":"+1 512 555 0199"}}`,
		agent, start.Format(time.RFC3339), minutes)
}

func (s *server) ehrCall(method, path, token, body string, header ...string) (response, map[string]any) {
	s.t.Helper()
	var r response
	if body == "" {
		r = s.do(method, path, token, nil, header...)
	} else {
		r = s.do(method, path, token, strings.NewReader(body), append([]string{"Content-Type", "application/json"}, header...)...)
	}
	var data map[string]any
	if r.status < 300 {
		d := r.json(s.t)
		if d["status"] != "success" {
			s.t.Fatalf("%s %s: not the success envelope: %s", method, path, r.body)
		}
		data, _ = d["data"].(map[string]any)
	}
	return r, data
}

// The same journey through either adapter.
func bookingJourney(t *testing.T, s *server, agentID string) {
	tok := s.world.token("reception")
	r, list := s.ehrCall("GET", "/agents?specialty=cardiology&page=1&limit=10", tok, "")
	if r.status != 200 || list["totalCount"] != 1.0 || list["items"].([]any)[0].(map[string]any)["id"] != agentID {
		t.Fatalf("agents: %d %s", r.status, r.body)
	}
	if r, a := s.ehrCall("GET", "/agents/"+agentID, tok, ""); r.status != 200 || a["timezone"] != "America/Chicago" || a["name"] != "Dr. Ana Lopez" {
		t.Fatalf("agent: %d %s", r.status, r.body)
	}
	if r := s.do("GET", "/agents/nobody", tok, nil); r.status != 404 || r.errorCode(t) != "agent_not_found" {
		t.Fatalf("unknown agent: %d %s", r.status, r.body)
	}

	day := time.Now().In(mustLoc("America/Chicago")).AddDate(0, 0, 2).Format(time.DateOnly)
	r, av := s.ehrCall("GET", fmt.Sprintf("/agents/%s/availability?from=%s&to=%s&duration=60", agentID, day, day), tok, "")
	if r.status != 200 || len(av["slots"].([]any)) != 10 || !strings.HasSuffix(av["slots"].([]any)[0].(map[string]any)["start"].(string), "T08:00:00-06:00") &&
		!strings.HasSuffix(av["slots"].([]any)[0].(map[string]any)["start"].(string), "T08:00:00-05:00") {
		t.Fatalf("availability: %d %s", r.status, r.body)
	}

	r, appt := s.ehrCall("POST", "/appointment/customer", tok, slotAt(agentID, 9, 30))
	if r.status != 201 || appt["status"] != "booked" || appt["agentId"] != agentID || appt["patient"].(map[string]any)["lastName"] != "Chen" || appt["source"] != "peer" {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	id := appt["id"].(string)
	if r := s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt(agentID, 9, 60)), "Content-Type", "application/json"); r.status != 409 || r.errorCode(t) != "agent_unavailable" {
		t.Fatalf("overlapping booking: %d %s", r.status, r.body)
	}
	r, av = s.ehrCall("GET", fmt.Sprintf("/agents/%s/availability?from=%s&to=%s&duration=60", agentID, day, day), tok, "")
	if len(av["slots"].([]any)) != 9 {
		t.Fatalf("the booked hour is still offered: %s", r.body)
	}
	r, page := s.ehrCall("GET", "/appointment?agentId="+agentID+"&status=booked&patientEmail=bo@example.com", tok, "")
	if r.status != 200 || page["totalCount"] != 1.0 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r, moved := s.ehrCall("POST", "/appointment/"+id+"/reschedule", tok, slotAt(agentID, 11, 30)[0:0]+fmt.Sprintf(`{"start":%q,"end":%q}`,
		timeAt(11, 0), timeAt(11, 45)))
	if r.status != 200 || moved["start"] != timeAt(11, 0) {
		t.Fatalf("reschedule: %d %s", r.status, r.body)
	}
	r, cancelled := s.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", tok, `{"reason":"feeling better"}`)
	if r.status != 200 || cancelled["status"] != "cancelled" {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	if r, _ := s.ehrCall("PUT", "/appointment/customer/"+id+"/cancel", tok, ""); r.status != 409 {
		t.Fatalf("second cancel: %d %s", r.status, r.body)
	}
	if r, _ := s.ehrCall("POST", "/appointment/"+id+"/reschedule", tok, fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(13, 0), timeAt(13, 30))); r.status != 409 {
		t.Fatalf("reschedule a cancelled one: %d %s", r.status, r.body)
	}
}

func mustLoc(name string) *time.Location {
	l, _ := time.LoadLocation(name)
	return l
}

// timeAt is hour:minute in Chicago on the day after tomorrow, RFC 3339.
func timeAt(hour, minute int) string {
	now := time.Now().In(mustLoc("America/Chicago"))
	return time.Date(now.Year(), now.Month(), now.Day()+2, hour, minute, 0, 0, mustLoc("America/Chicago")).Format(time.RFC3339)
}

func TestIntegration_WebSocketBot(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t, wsbottest.WithAuthorization("Basic Ym90OnMzY3JldA==")) // bot:s3cret
	bot.AddAgent(drAna, workdays(5))
	cfg := integrationFile(t, "wsbot", bot.URL(), "    authentication: { type: basic, username: bot, password: \"env:PEER_SECRET\" }\n")
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	bookingJourney(t, s, "dr-ana")
}

func TestIntegration_FHIR(t *testing.T) {
	w := newWorld(t)
	peer := fhirtest.Start(t, fhirtest.WithAPIKey("s3cret"))
	id := peer.AddAgent(t, drAna, workdays(5))
	cfg := integrationFile(t, "fhir", peer.URL(), "    authentication: { type: api_key, api_key: \"env:PEER_SECRET\" }\n")
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	bookingJourney(t, s, id)
}

func TestIntegration_BookingIsSafe(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	tok := w.token("reception")

	// Two concurrent bookings of the same time: one 201, one 409.
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt("dr-ana", 14, 30)), "Content-Type", "application/json").status
		}()
	}
	wg.Wait()
	if !(statuses[0] == 201 && statuses[1] == 409 || statuses[0] == 409 && statuses[1] == 201) {
		t.Fatalf("concurrent bookings: %v", statuses)
	}

	// Idempotency-Key: the repeat returns the first answer and books nothing.
	first, a := s.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", 15, 30), "Idempotency-Key", "booking-42")
	again, b := s.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", 15, 30), "Idempotency-Key", "booking-42")
	if first.status != 201 || again.status != 201 || a["id"] != b["id"] || again.header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}
	if n := w.count("idempotency_keys"); n != 1 {
		t.Fatalf("%d idempotency rows", n)
	}
	reused := s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt("dr-ana", 16, 30)), "Content-Type", "application/json", "Idempotency-Key", "booking-42")
	if reused.status != 409 || reused.errorCode(t) != "idempotency_key_reused" {
		t.Fatalf("key reused: %d %s", reused.status, reused.body)
	}
	_, list := s.ehrCall("GET", "/appointment?agentId=dr-ana", tok, "")
	if list["totalCount"] != 2.0 {
		t.Fatalf("%v appointments, want 2", list["totalCount"])
	}
}

func TestIntegration_RefusesBadInputAndReportsUpstreamFailures(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	tok := w.token("reception")
	past := strings.Replace(slotAt("dr-ana", 9, 30), timeAt(9, 0), "2020-01-01T09:00:00-06:00", 1)
	for what, c := range map[string]struct {
		body    string
		status  int
		code    string
		mention string
	}{
		"start in the past": {past, 400, "validation_failed", "start must be in the future"},
		"too long":          {slotAt("dr-ana", 9, 600), 400, "validation_failed", "at most 8 hours"},
		"too short":         {slotAt("dr-ana", 9, 2), 400, "validation_failed", "at least 5 minutes"},
		"no patient name":   {strings.Replace(slotAt("dr-ana", 9, 30), `"firstName":"Bo"`, `"firstName":""`, 1), 400, "validation_failed", "patient.firstName"},
		"unknown agent":     {slotAt("dr-nobody", 9, 30), 404, "agent_not_found", ""},
		"outside the day":   {slotAt("dr-ana", 20, 30), 409, "agent_unavailable", ""},
		"unknown field":     {`{"agentId":"dr-ana","doctor":"x"}`, 400, "invalid_json", "doctor"},
	} {
		r := s.do("POST", "/appointment/customer", tok, strings.NewReader(c.body), "Content-Type", "application/json")
		if code := r.errorCode(t); r.status != c.status || code != c.code || !strings.Contains(string(r.body), c.mention) {
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	for path, code := range map[string]string{
		"/appointment?status=lost":                                  "validation_failed",
		"/agents/dr-ana/availability?from=2030-01-01&to=2030-03-01": "validation_failed",
		"/appointment?limit=500":                                    "validation_failed",
	} {
		if r := s.do("GET", path, tok, nil); r.status != 400 || r.errorCode(t) != code {
			t.Errorf("%s: %d %s", path, r.status, r.body)
		}
	}
	if r := s.do("GET", "/agents", "", nil); r.status != 401 {
		t.Errorf("no token: %d", r.status)
	}
	bot.Close()
	if r := s.do("GET", "/agents", tok, nil); r.status < 502 || r.status > 504 || r.errorCode(t) == "" {
		t.Fatalf("bot down: %d %s", r.status, r.body)
	}
	noEHR := w.start(nil)
	if r := noEHR.do("GET", "/agents", tok, nil); r.status != 503 || r.errorCode(t) != "no_ehr_configured" {
		t.Fatalf("no integration EHR: %d %s", r.status, r.body)
	}
}

func TestSearch_ThroughTheWebSocketBot(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddPatient(ehr.Patient{ID: "p-7", Name: ehr.HumanName{Family: "Okafor", Given: []string{"Ben"}}, BirthDate: "1970-01-02",
		Identifiers: []ehr.Identifier{{System: "urn:mrn", Value: "M-7", Type: "MR"}}})
	cfg := integrationFile(t, "wsbot", bot.URL(), "")
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	r, ans := s.search(w.token("u"), `{"query":"family:Okafor"}`)
	if r.status != 200 || ans.Status != "success" || ans.Data.TotalCount != 1 || ans.Data.Results[0].Sources[0].PatientID != "p-7" || ans.Metadata.Sources[0] != "peer" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}
