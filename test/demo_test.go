package test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/cmd/carebridge-demo/demoehr"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
	"github.com/carebridge/carebridge/test/testenv"
)

// The demo EHR systems of `make run`, as a newcomer meets them: a search
// merges the people both systems hold, and the practitioners can be
// booked.
func TestDemo_SearchMergesAndBookingWorks(t *testing.T) {
	medplum := os.Getenv(fhirtest.EnvDir)
	if medplum == "" {
		testenv.Missing(t, "FHIR server: "+fhirtest.EnvDir+" not set", "run make test, which installs it (scripts/install-medplum.sh)")
	}
	key := bytes.Repeat([]byte{5}, 32)
	d, err := demoehr.Start(t.Context(), demoehr.Config{Dir: t.TempDir(), Medplum: medplum, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Integration != demoehr.FHIRName {
		t.Fatalf("integration EHR %s", d.Integration)
	}
	cfg, err := ehrkinds.All().Load(d.File, key, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(d.File)
	if bytes.Count(raw, []byte("enc:v1:")) != 2 {
		t.Fatalf("the EHR systems file keeps a secret in the clear:\n%s", raw)
	}
	w := newWorld(t)
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	tok := w.token("newcomer")

	r, ans := s.search(tok, fmt.Sprintf(`{"query":"family:%s given:%s"}`, d.BothFamily, d.BothGiven))
	if r.status != 200 || ans.Status != "success" || ans.Data.TotalCount != 1 || len(ans.Data.Results[0].Sources) != 2 {
		t.Fatalf("the person in both systems: %d %s", r.status, r.body)
	}
	checkDemoRecords(t, s, w.scopedToken("newcomer", demoScopes), d, ans.Data.Results[0].ID)
	// The staff scopes without the record types' are not enough.
	records := fmt.Sprintf(`{"query":"family:%s given:%s","filters":{"recordType":"observation"}}`, d.BothFamily, d.BothGiven)
	if r, _ := s.searchRecords(tok, records); r.status != 403 || !strings.Contains(string(r.body), "user/Observation.rs") {
		t.Fatalf("records with the patient search scope alone: %d %s", r.status, r.body)
	}
	r, ans = s.search(tok, `{"query":"given:Ava","pagination":{"limit":100}}`)
	if r.status != 200 || ans.Data.TotalCount < 2 || strings.Join(ans.Metadata.Sources, ",") != "demo-fhir,demo-bot" {
		t.Fatalf("a common given name: %d %s", r.status, r.body)
	}
	checkDemoCasesSeeded(t, s, tok, demoehr.FHIRName, demoehr.BotName)

	r, agents := s.ehrCall("GET", "/agents", tok, "")
	if r.status != 200 || agents["totalCount"] != 3.0 {
		t.Fatalf("agents: %d %s", r.status, r.body)
	}
	demoBook(t, s, tok, d)
	if r, page := s.ehrCall("GET", "/appointment?agentId="+d.AgentID, tok, ""); r.status != 200 || page["totalCount"] != 1.0 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
}

// demoBook books the demo's first practitioner as `make run` prints it
// (a free slot two days ahead) with tok, acting with the headers hdr, and
// returns the appointment.
func demoBook(t *testing.T, s *server, tok string, d *demoehr.Demo, hdr ...string) map[string]any {
	t.Helper()
	_, zone := d.Agent()
	loc, _ := time.LoadLocation(zone)
	day := time.Now().In(loc).AddDate(0, 0, 2)
	if day.Weekday() == time.Sunday {
		day = day.AddDate(0, 0, 1)
	}
	date := day.Format(time.DateOnly)
	r, av := s.ehrCall("GET", fmt.Sprintf("/agents/%s/availability?from=%s&to=%s&duration=30", d.AgentID, date, date), tok, "", hdr...)
	slots, _ := av["slots"].([]any)
	if r.status != 200 || len(slots) != 16 {
		t.Fatalf("availability on %s: %d %s", date, r.status, r.body)
	}
	start := slots[3].(map[string]any)["start"].(string)
	body := fmt.Sprintf(`{"agentId":%q,"start":%q,"durationMinutes":30,"reason":"demo visit","patient":{"firstName":"Ava","lastName":"Alvarez","dateOfBirth":"1980-02-01","email":"ava@example.org"}}`, d.AgentID, start)
	r, appt := s.ehrCall("POST", "/appointment/customer", tok, body, append([]string{"Idempotency-Key", "demo-1"}, hdr...)...)
	if r.status != 201 || appt["status"] != "booked" {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	return appt
}

// demoScopes are the scopes of the token `make run` prints (scripts/run.sh):
// patient search and links, appointments, and reading the record types.
const demoScopes = "user/Patient.rus user/Appointment.cruds user/Encounter.rs user/Condition.rs user/Observation.rs " +
	"user/MedicationRequest.rs user/AllergyIntolerance.rs user/Immunization.rs user/Procedure.rs " +
	"user/DocumentReference.rs user/DiagnosticReport.rs"

// checkDemoRecords runs the records calls `make run` prints, and one of
// every type: the person in both systems (personID in a search of people)
// has records of each type from both, and each type's newest is one item
// with both sources.
func checkDemoRecords(t *testing.T, s *server, tok string, d *demoehr.Demo, personID string) {
	t.Helper()
	query := fmt.Sprintf("family:%s given:%s", d.BothFamily, d.BothGiven)
	for _, typ := range []string{"encounter", "condition", "observation", "medication_request", "allergy_intolerance",
		"immunization", "procedure", "document_reference", "diagnostic_report"} {
		r, ans := s.searchRecords(tok, fmt.Sprintf(`{"query":%q,"filters":{"recordType":%q}}`, query, typ))
		if r.status != 200 || ans.Status != "success" || ans.Data.TotalCount < 2 || len(ans.Data.Results) != ans.Data.TotalCount {
			t.Fatalf("%s records: %d %s", typ, r.status, r.body)
		}
		both := 0
		for _, it := range ans.Data.Results {
			if it.PersonID != personID || it.RecordType != typ || it.Code.Code == "" || it.Date == "" {
				t.Fatalf("%s records: an item of another person or without code or date: %s", typ, r.body)
			}
			if len(it.Sources) == 2 && it.Sources[0].Source == demoehr.FHIRName && it.Sources[1].Source == demoehr.BotName {
				both++
			}
		}
		if both != 1 || len(ans.Data.Results[0].Sources) != 2 {
			t.Fatalf("%s records: %d items from both systems, want the newest: %s", typ, both, r.body)
		}
	}
	// The observations of the last twelve months, as make run prints them.
	from, to := time.Now().AddDate(-1, 0, 0).Format(time.DateOnly), time.Now().Format(time.DateOnly)
	r, ans := s.searchRecords(tok, fmt.Sprintf(`{"query":%q,"filters":{"recordType":"observation","dateRange":"%s/%s"}}`, query, from, to))
	if r.status != 200 || len(ans.Data.Results) == 0 || len(ans.Data.Results[0].Sources) != 2 {
		t.Fatalf("observations of the last year: %d %s", r.status, r.body)
	}
	for _, it := range ans.Data.Results {
		if day := it.Date[:len(time.DateOnly)]; day < from || day > to || len(it.Value) == 0 || string(it.Value) == "null" {
			t.Fatalf("observations of %s/%s: %s", from, to, r.body)
		}
	}
}

// The matching cases of `make run`'s demo (demoehr.Cases), searched as it
// prints them, acting for practice A (both systems serve it): the typo
// pair is one person (certain), the namesakes and the household two each
// (the household not even possible matches), the probable pair two that
// name each other, until the member links them: then one, confirmed.
func TestDemo_MatchingCases(t *testing.T) {
	w := newWorld(t)
	d, p, cfg := startDemoPractices(t, w, 10)
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	tok := w.scopedToken("owner-a", demoScopes)
	search := func(caseName string) (response, matchAnswer) {
		t.Helper()
		r := s.do("POST", "/api/v1/search", tok, strings.NewReader(fmt.Sprintf(`{"query":"family:%s"}`, demoehr.CaseFamily(caseName))),
			"Content-Type", "application/json", "X-Business-Id", p.FHIR)
		var a matchAnswer
		if r.status != 200 || json.Unmarshal(r.body, &a) != nil || a.Status != "success" || len(a.Data.Results) != a.Data.TotalCount {
			t.Fatalf("%s: %d %s", caseName, r.status, r.body)
		}
		return r, a
	}
	has := func(list []string, want ...string) bool {
		for _, w := range want {
			if !slices.Contains(list, w) {
				return false
			}
		}
		return true
	}

	// The typo pair: one person of both records, certain by name (one
	// typo), birth date, phone and address.
	r, a := search(demoehr.CaseTypo)
	if a.Data.TotalCount != 1 || len(a.Data.Results[0].Sources) != 2 {
		t.Fatalf("the typo pair is not one person: %s", r.body)
	}
	if m := a.Data.Results[0].Match; m == nil || m.Grade != "certain" || m.Score <= 0 || m.Score > 1 ||
		!has(m.Reasons, "family", "given~", "birthDate", "phone", "address") || slices.Contains(m.Reasons, "identifier") {
		t.Fatalf("the typo pair's match: %s", r.body)
	}

	// The namesakes and the household: two people each, none merged; the
	// household's are not even possible matches.
	for _, c := range []string{demoehr.CaseNamesakes, demoehr.CaseHousehold} {
		r, a := search(c)
		if a.Data.TotalCount != 2 {
			t.Fatalf("%s: not two people: %s", c, r.body)
		}
		for _, p := range a.Data.Results {
			if len(p.Sources) != 1 || p.Match != nil || p.PossibleMatches == nil ||
				c == demoehr.CaseHousehold && len(p.PossibleMatches) != 0 {
				t.Fatalf("%s: %s", c, r.body)
			}
		}
	}

	// The probable pair: two people, each the other's possible match.
	r, a = search(demoehr.CaseProbable)
	if a.Data.TotalCount != 2 {
		t.Fatalf("the probable pair: not two people: %s", r.body)
	}
	for i, p := range a.Data.Results {
		other := a.Data.Results[1-i].ID
		if p.Match != nil || len(p.PossibleMatches) != 1 || p.PossibleMatches[0].PersonID != other ||
			p.PossibleMatches[0].Score <= 0 || p.PossibleMatches[0].Score > 1 || !has(p.PossibleMatches[0].Reasons, "family", "given", "birthDate") {
			t.Fatalf("the probable pair's possible matches: %s", r.body)
		}
	}

	// The link `make run` prints: from the next search (the answer above
	// is cached) one person, confirmed by the link.
	if d.Probable[0].Source != demoehr.FHIRName || d.Probable[1].Source != demoehr.BotName || d.Probable[0].PatientID == "" {
		t.Fatalf("the probable pair's records: %+v", d.Probable)
	}
	link := fmt.Sprintf(`{"decision":"same","records":[{"source":%q,"patientId":%q},{"source":%q,"patientId":%q}]}`,
		d.Probable[0].Source, d.Probable[0].PatientID, d.Probable[1].Source, d.Probable[1].PatientID)
	lr := s.do("POST", "/api/v1/person-links", tok, strings.NewReader(link), "Content-Type", "application/json", "X-Business-Id", p.FHIR)
	if lr.status != 201 || lr.json(t)["decision"] != "same" {
		t.Fatalf("link: %d %s", lr.status, lr.body)
	}
	r, a = search(demoehr.CaseProbable)
	if a.Data.TotalCount != 1 || len(a.Data.Results[0].Sources) != 2 || len(a.Data.Results[0].PossibleMatches) != 0 {
		t.Fatalf("the linked pair is not one person: %s", r.body)
	}
	if m := a.Data.Results[0].Match; m == nil || m.Grade != "confirmed" || !slices.Equal(m.Reasons, []string{"link"}) {
		t.Fatalf("the linked pair's match: %s", r.body)
	}
}

// checkDemoCasesSeeded checks the matching cases' records are in the demo
// systems with their contact details, whatever the matcher makes of them:
// a search of each case's family name finds its two records, the first
// held by fhir and the second by bot, each with a phone or no contact
// detail at all as made; the household's are two people under any rule.
func checkDemoCasesSeeded(t *testing.T, s *server, tok, fhir, bot string) {
	t.Helper()
	for _, c := range demoehr.Cases() {
		r := s.do("POST", "/api/v1/search", tok, strings.NewReader(fmt.Sprintf(`{"query":"family:%s"}`, c.Family)), "Content-Type", "application/json")
		var a struct {
			Data struct {
				Results []struct {
					Sources []struct {
						Source    string `json:"source"`
						PatientID string `json:"patientId"`
					} `json:"sources"`
					Telecom []struct{ System, Value string } `json:"telecom"`
					Address []struct {
						Line       []string `json:"line"`
						PostalCode string   `json:"postalCode"`
					} `json:"address"`
				} `json:"results"`
			} `json:"data"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &a) != nil {
			t.Fatalf("case %s: %d %s", c.Name, r.status, r.body)
		}
		held := map[string]bool{}
		phones, addresses := 0, 0
		for _, p := range a.Data.Results {
			for _, src := range p.Sources {
				held[src.Source+"/"+src.PatientID] = true
			}
			for _, tc := range p.Telecom {
				if tc.System == "phone" {
					phones++
				}
			}
			addresses += len(p.Address)
		}
		wantPhones := 0
		for _, rec := range []ehr.Patient{c.FHIR, c.Bot} {
			for _, tc := range rec.Telecom {
				if tc.System == "phone" {
					wantPhones++
				}
			}
		}
		fromBot := held[bot+"/"+c.Bot.ID]
		fromFHIR := 0
		for k := range held {
			if strings.HasPrefix(k, fhir+"/") && k != bot+"/"+c.Bot.ID {
				fromFHIR++
			}
		}
		// A merged person keeps both phones when they are written apart.
		if len(held) != 2 || !fromBot || fromFHIR != 1 || phones == 0 || phones > wantPhones || addresses == 0 ||
			c.Name == demoehr.CaseHousehold && len(a.Data.Results) != 2 {
			t.Fatalf("case %s: its records are not both found with their contact details: %s", c.Name, r.body)
		}
	}
}

// Without Node.js the demo is the bot alone, and it answers the
// appointment endpoints too.
func TestDemo_WithoutTheFHIRServerTheBotAnswersEverything(t *testing.T) {
	key := bytes.Repeat([]byte{6}, 32)
	d, err := demoehr.Start(t.Context(), demoehr.Config{Dir: t.TempDir(), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Integration != demoehr.BotName || !strings.Contains(d.Summary(), "FHIR demo off") {
		t.Fatalf("integration %s, summary %q", d.Integration, d.Summary())
	}
	cfg, err := ehrkinds.All().Load(d.File, key, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	// The bot is polled; the front desk works on the FHIR demo only.
	if got := cfg.SyncInterval(demoehr.BotName); got != demoehr.SyncInterval {
		t.Fatalf("sync interval of the bot: %s", got)
	}
	if _, err := demoehr.OpenFrontDesk(d.File, key); !errors.Is(err, demoehr.ErrNoFHIRDemo) {
		t.Fatalf("front desk without the FHIR demo: %v", err)
	}
	w := newWorld(t)
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	tok := w.token("newcomer")
	if r, ans := s.search(tok, fmt.Sprintf(`{"query":"family:%s given:%s"}`, d.BothFamily, d.BothGiven)); r.status != 200 || ans.Data.TotalCount != 1 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	body := fmt.Sprintf(`{"query":"family:%s given:%s","filters":{"recordType":"condition"}}`, d.BothFamily, d.BothGiven)
	if r, ans := s.searchRecords(w.scopedToken("newcomer", demoScopes), body); r.status != 200 || ans.Data.TotalCount < 2 ||
		len(ans.Data.Results) != ans.Data.TotalCount || ans.Data.Results[0].Source != demoehr.BotName {
		t.Fatalf("records: %d %s", r.status, r.body)
	}
	if r, agents := s.ehrCall("GET", "/agents", tok, ""); r.status != 200 || agents["totalCount"] != 3.0 {
		t.Fatalf("agents: %d %s", r.status, r.body)
	}
	// The bot holds both records of each matching case.
	if d.Probable[0] != (ehr.SourceRef{Source: demoehr.BotName, PatientID: "case-probable-1"}) || d.Probable[1].Source != demoehr.BotName {
		t.Fatalf("the probable pair without the FHIR demo: %+v", d.Probable)
	}
	checkDemoCasesSeeded(t, s, tok, demoehr.BotName, demoehr.BotName)
	if r, a := s.ehrCall("GET", "/agents/"+d.AgentID, tok, ""); r.status != 200 || a["timezone"] != "America/Chicago" {
		t.Fatalf("agent: %d %s", r.status, r.body)
	}
}

// `make run` makes two practices, one per demo EHR: the file binds the
// FHIR server to practice A and the bot to practice B, each practice's
// appointments go to its own EHR, and integration.ehr stays the FHIR
// server. Each practice's owner can act for it with X-Business-Id.
func TestDemo_TwoPracticesEachServedByItsOwnEHR(t *testing.T) {
	w := newWorld(t)
	d, p, cfg := startDemoPractices(t, w, 7)
	raw, _ := os.ReadFile(d.File)
	if !cfg.MultiPractice() || cfg.Integration.EHR != demoehr.FHIRName ||
		!cfg.Serves(demoehr.FHIRName, p.FHIR) || cfg.Serves(demoehr.FHIRName, p.Bot) ||
		!cfg.Serves(demoehr.BotName, p.Bot) || !cfg.Serves(demoehr.BotName, p.FHIR) {
		t.Fatalf("the systems are not bound as the demo says (FHIR: A; bot: A and B):\n%s", raw)
	}
	for id, want := range map[string]string{p.FHIR: demoehr.FHIRName, p.Bot: demoehr.BotName} {
		if got, ok := cfg.IntegrationFor(id); !ok || got != want {
			t.Fatalf("integration EHR of %s: %q, want %q:\n%s", id, got, want, raw)
		}
	}

	// The calls `make run` prints for each practice answer.
	s := w.start(func(c *app.Config) { c.EHR = cfg })
	for owner, id := range map[string]string{"owner-a": p.FHIR, "owner-b": p.Bot} {
		tok := w.token(owner)
		if r := s.do("POST", "/api/v1/search", tok, strings.NewReader(`{"query":"given:Ava"}`),
			"Content-Type", "application/json", "X-Business-Id", id); r.status != 200 {
			t.Fatalf("search acting for %s: %d %s", owner, r.status, r.body)
		}
		if r, agents := s.ehrCall("GET", "/agents", tok, "", "X-Business-Id", id); r.status != 200 || agents["totalCount"] != 3.0 {
			t.Fatalf("agents acting for %s: %d %s", owner, r.status, r.body)
		}
	}
}

// Without Node.js the bot alone serves both practices.
func TestDemo_WithoutTheFHIRServerTheBotServesBothPractices(t *testing.T) {
	p := demoehr.Practices{FHIR: "6f1c2a3e-0000-4000-8000-00000000000a", Bot: "6f1c2a3e-0000-4000-8000-00000000000b"}
	key := bytes.Repeat([]byte{8}, 32)
	d, err := demoehr.Start(t.Context(), demoehr.Config{Dir: t.TempDir(), Key: key, Practices: p})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := ehrkinds.All().Load(d.File, key, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{p.FHIR, p.Bot} {
		if got, ok := cfg.IntegrationFor(id); !cfg.Serves(demoehr.BotName, id) || !ok || got != demoehr.BotName {
			raw, _ := os.ReadFile(d.File)
			t.Fatalf("practice %s: served %v, integration %q:\n%s", id, cfg.Serves(demoehr.BotName, id), got, raw)
		}
	}
}

// demoWatch are the events `make run` prints to subscribe to when watching
// EHR sync (scripts/run.sh).
const demoWatch = "appointment.booked,appointment.rescheduled,appointment.cancelled,appointment.status_changed"

// `make run`'s demo polls its integration EHRs every few seconds, and the
// front desk it prints (carebridge-demo front-desk, demoehr.FrontDesk)
// changes appointments directly in the demo FHIR server: marking arrived
// the appointment just booked through Carebridge, then booking, moving and
// cancelling one at the front desk each reach a subscriber as one event
// with origin "ehr" (the booking through the API: once, origin "api").
func TestDemo_FrontDeskChangesBecomeEvents(t *testing.T) {
	medplum := os.Getenv(fhirtest.EnvDir)
	if medplum == "" {
		testenv.Missing(t, "FHIR server: "+fhirtest.EnvDir+" not set", "run make test, which installs it (scripts/install-medplum.sh)")
	}
	w := newWorld(t)
	sw := &syncWorld{world: w, h: newHooks(w), rc: newReceiver(t, nil)}
	_, sw.secret = sw.h.add(sw.rc.url(), demoWatch)
	p := demoehr.Practices{FHIR: w.createBusiness("owner-a"), Bot: w.createBusiness("owner-b")}
	key := bytes.Repeat([]byte{9}, 32)
	d, err := demoehr.Start(t.Context(), demoehr.Config{Dir: t.TempDir(), Medplum: medplum, Key: key, Practices: p})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	cfg, err := ehrkinds.All().Load(d.File, key, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{demoehr.FHIRName, demoehr.BotName} {
		if got := cfg.SyncInterval(name); got != demoehr.SyncInterval {
			raw, _ := os.ReadFile(d.File)
			t.Fatalf("sync interval of %s: %s, want %s:\n%s", name, got, demoehr.SyncInterval, raw)
		}
	}
	s := w.start(func(c *app.Config) { c.EHR = cfg; sw.h.configure(c) }) // the file's interval
	sw.waitBaseline(demoehr.FHIRName)
	desk, err := demoehr.OpenFrontDesk(d.File, key)
	if err != nil {
		t.Fatal(err)
	}

	appt := demoBook(t, s, w.token("owner-a"), d)
	apiID := appt["id"].(string)
	arrived := frontDeskDo(t, desk, "arrive", "")
	if arrived.ID != apiID || arrived.Status != "arrived" {
		t.Fatalf("front-desk arrive changed %+v, want %s arrived", arrived, apiID)
	}
	sw.waitEvent(apiID, "appointment.status_changed")
	booked := frontDeskDo(t, desk, "book", "")
	sw.waitEvent(booked.ID, "appointment.booked")
	moved := frontDeskDo(t, desk, "move", booked.ID)
	sw.waitEvent(booked.ID, "appointment.rescheduled")
	frontDeskDo(t, desk, "cancel", booked.ID)
	sw.waitEvent(booked.ID, "appointment.cancelled")

	event := func(typ, id, status string, c demoehr.Change) want {
		return want{typ, p.FHIR, map[string]any{"appointmentId": id, "agentId": d.AgentID, "status": status,
			"start": c.Start, "end": c.End, "origin": "ehr"}}
	}
	apiBooked := event("appointment.booked", apiID, "booked", arrived)
	apiBooked.data["origin"] = "api"
	checkReceived(t, "demo", sw.rc, sw.secret, []want{
		apiBooked,
		event("appointment.status_changed", apiID, "checked_in", arrived),
		event("appointment.booked", booked.ID, "booked", booked),
		event("appointment.rescheduled", booked.ID, "booked", moved),
		event("appointment.cancelled", booked.ID, "cancelled", moved),
	})
	if _, err := desk.Do(t.Context(), "no-such-change", booked.ID); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("an unknown front-desk change: %v", err)
	}
	if _, err := desk.Do(t.Context(), "arrive", "no-such-appointment"); err == nil {
		t.Fatal("front-desk arrive of an appointment the EHR does not hold: no error")
	}
}

// frontDeskDo makes a front-desk change.
func frontDeskDo(t *testing.T, desk *demoehr.FrontDesk, action, id string) demoehr.Change {
	t.Helper()
	c, err := desk.Do(t.Context(), action, id)
	if err != nil {
		t.Fatalf("front-desk %s %s: %v", action, id, err)
	}
	return c
}

// startDemoPractices makes practice A (owner-a) and B (owner-b), starts
// the demo EHR systems for them (the FHIR server serving A, the bot both;
// secrets sealed with a key of keyByte) and loads their EHR systems file.
func startDemoPractices(t *testing.T, w *world, keyByte byte) (*demoehr.Demo, demoehr.Practices, *ehrconfig.Config) {
	t.Helper()
	medplum := os.Getenv(fhirtest.EnvDir)
	if medplum == "" {
		testenv.Missing(t, "FHIR server: "+fhirtest.EnvDir+" not set", "run make test, which installs it (scripts/install-medplum.sh)")
	}
	p := demoehr.Practices{FHIR: w.createBusiness("owner-a"), Bot: w.createBusiness("owner-b")}
	key := bytes.Repeat([]byte{keyByte}, 32)
	d, err := demoehr.Start(t.Context(), demoehr.Config{Dir: t.TempDir(), Medplum: medplum, Key: key, Practices: p})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	cfg, err := ehrkinds.All().Load(d.File, key, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	return d, p, cfg
}
