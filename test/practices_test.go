package test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// practicesFile is a multi-practice EHR systems file: fa bound to business
// a, fb to b, and the bot, serving both, their integration EHR.
func practicesFile(t *testing.T, a, b string, fa, fb *fakeEHR, botURL string) *ehrconfig.Config {
	t.Helper()
	yaml, env := ehrYAML(3000, fa, fb)
	for name, biz := range map[string]string{fa.name: a, fb.name: b} {
		site := "    sites: [site-" + name + "]\n"
		yaml = strings.Replace(yaml, site, site+"    businesses: ["+biz+"]\n", 1)
	}
	yaml += "  - name: bot\n    adapter: wsbot\n    base_url: " + botURL + "\n    timeout: 3000\nintegration:\n  ehr: bot\n"
	cfg, err := ehrkinds.All().Parse([]byte(yaml), nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("EHR file: %v\n%s", err, yaml)
	}
	if !cfg.MultiPractice() {
		t.Fatal("the file must be multi-practice")
	}
	return cfg
}

// TestPractices_NothingCrossesBetweenTwoPractices runs two practices, A and
// B, on one deployment: a FHIR EHR each and a bot serving both as their
// integration EHR.
func TestPractices_NothingCrossesBetweenTwoPractices(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	a, b := w.createBusiness("owner-a"), w.createBusiness("owner-b")
	fa := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	fb := newFakeEHR(t, "clinicb", fhirPatient("b-1", "Okafor", "Bea", "1970-01-02", "MRN-9"), fhirPatient("b-2", "Lopez", "Luz", "1990-03-04", "MRN-7"))
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) {
		c.EHR = practicesFile(t, a, b, fa, fb, bot.URL())
		c.SearchCacheTTL, c.SearchRateLimit = time.Minute, 1000
		h.configure(c)
	})
	staffA, staffB, both := w.token("owner-a"), w.token("owner-b"), w.token("both")
	patient := w.scopedToken("pat", "patient/Appointment.cus")
	for biz, owner := range map[string]string{a: staffA, b: staffB} {
		s.bdo("POST", "/business/"+biz+"/members", owner, map[string]string{"subject": "both", "role": "staff"}).data(t, 201, "Member added successfully")
	}
	inA := []string{"X-Business-Id", a}
	inB := []string{"X-Business-Id", strings.ToUpper(b)} // any case
	search := func(tok string, header []string) (response, searchAnswer) {
		t.Helper()
		r := s.do("POST", "/api/v1/search", tok, strings.NewReader(`{"query":"family:Lopez"}`), append([]string{"Content-Type", "application/json"}, header...)...)
		var ans searchAnswer
		if r.status == 200 {
			ans = searchAnswerOf(t, r)
		}
		return r, ans
	}

	// A person held only by B's EHR is invisible to A's staff (the fake
	// EHRs answer every search with all their patients).
	r, ans := search(staffA, nil)
	if r.status != 200 || ans.Data.TotalCount != 1 || ans.Data.Results[0].Sources[0].PatientID != "a-1" || strings.Join(ans.Metadata.Sources, ",") != "clinica,bot" || fb.calls.Load() != 0 {
		t.Fatalf("A's staff, its only practice: %d %s; B's EHR asked %d times", r.status, r.body, fb.calls.Load())
	}
	wantRefused(t, "A's staff naming B", s.do("POST", "/api/v1/search", staffA, strings.NewReader(`{"query":"family:Okafor"}`), "Content-Type", "application/json", "X-Business-Id", b), 404, "business_not_found")
	wantRefused(t, "A's staff naming no business", s.do("GET", "/agents", staffA, nil, "X-Business-Id", "6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f"), 404, "business_not_found")
	wantRefused(t, "A's staff listing B's appointments", s.do("GET", "/appointment", staffA, nil, inB...), 404, "business_not_found")
	wantRefused(t, "a header not a UUID", s.do("GET", "/agents", staffA, nil, "X-Business-Id", "clinic-a"), 400, "invalid_business_id")
	if fb.calls.Load() != 0 {
		t.Fatal("B's EHR was asked for A's staff")
	}

	// A member of both must choose; choosing, it gets that practice.
	wantRefused(t, "member of both without the header", s.do("POST", "/api/v1/search", both, strings.NewReader(`{"query":"family:Okafor"}`), "Content-Type", "application/json"), 400, "business_required")
	wantRefused(t, "member of both, agents without the header", s.do("GET", "/agents", both, nil), 400, "business_required")
	if r, ans := search(both, inB); r.status != 200 || ans.Data.TotalCount != 2 || ans.Data.Results[1].Sources[0].PatientID != "b-1" || strings.Join(ans.Metadata.Sources, ",") != "clinicb,bot" {
		t.Fatalf("member of both acting for B: %d %s", r.status, r.body)
	}

	// Identical searches for A then B are two cache entries: each asks its
	// own EHR once, and the repeat of each is its own hit.
	callsA, callsB := fa.calls.Load(), fb.calls.Load()
	rA, first := search(both, inA)
	if rA.status != 200 || first.Metadata.CacheHit || first.Data.TotalCount != 1 || fa.calls.Load() != callsA+1 {
		t.Fatalf("A after B: %d %s; A's EHR calls %d → %d", rA.status, rA.body, callsA, fa.calls.Load())
	}
	_, againB := search(both, inB)
	_, againA := search(both, inA)
	if !againB.Metadata.CacheHit || againB.Data.TotalCount != 2 || !againA.Metadata.CacheHit || againA.Data.TotalCount != 1 || fb.calls.Load() != callsB {
		t.Fatalf("repeats: B hit %v (%d), A hit %v (%d); B's EHR calls %d → %d", againB.Metadata.CacheHit, againB.Data.TotalCount,
			againA.Metadata.CacheHit, againA.Data.TotalCount, callsB, fb.calls.Load())
	}

	// A's subscription gets A's appointment events only.
	rcA, rcB := newReceiver(t, nil), newReceiver(t, nil)
	_, secrets := h.addAll([]string{rcA.url(), "*", "--business", a}, []string{rcB.url(), "*", "--business", b})

	// A patient's booking at A is not in its listing at B.
	wantRefused(t, "a patient naming no business", s.do("GET", "/appointment", patient, nil), 400, "business_required")
	r, booked := s.ehrCall("POST", "/appointment/customer", patient, slotAt("dr-ana", 9, 30), inA...)
	if r.status != 201 {
		t.Fatalf("patient books at A: %d %s", r.status, r.body)
	}
	if r, page := s.ehrCall("GET", "/appointment", patient, "", inB...); r.status != 200 || page["totalCount"] != 0.0 {
		t.Fatalf("the patient's listing at B: %d %s", r.status, r.body)
	}
	wantRefused(t, "the patient cancelling its A booking at B",
		s.do("PUT", "/appointment/customer/"+booked["id"].(string)+"/cancel", patient, strings.NewReader(`{}`), append([]string{"Content-Type", "application/json"}, inB...)...),
		404, "appointment_not_found")
	if r, page := s.ehrCall("GET", "/appointment", patient, "", inA...); r.status != 200 || page["totalCount"] != 1.0 {
		t.Fatalf("the patient's listing at A: %d %s", r.status, r.body)
	}
	// B's staff books at B (the same agent of the shared bot, another hour).
	if r, _ := s.ehrCall("POST", "/appointment/customer", staffB, slotAt("dr-ana", 13, 30)); r.status != 201 {
		t.Fatalf("B's staff books: %d %s", r.status, r.body)
	}
	apptData := map[string]any{"appointmentId": anyValue, "agentId": "dr-ana", "status": "booked", "start": anyValue, "end": anyValue, "origin": "api"}
	eventually(t, 20*time.Second, "each practice's appointment event", func() bool { return rcA.count() >= 1 && rcB.count() >= 1 })
	checkReceived(t, "A's subscription", rcA, secrets[0], []want{{"appointment.booked", a, apptData}})
	checkReceived(t, "B's subscription", rcB, secrets[1], []want{{"appointment.booked", b, apptData}})
}

func searchAnswerOf(t *testing.T, r response) searchAnswer {
	t.Helper()
	var a searchAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("search answer: %v: %s", err, r.body)
	}
	return a
}

// TestPractices_ASinglePracticeDeploymentChecksAHeaderWhenSent: without
// businesses in the EHR systems file every caller works as before, and
// X-Business-Id, when sent, must name a business the caller may act for.
func TestPractices_ASinglePracticeDeploymentChecksAHeaderWhenSent(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	mine, other := w.createBusiness("owner"), w.createBusiness("someone")
	owner, stranger := w.token("owner"), w.token("stranger")
	patient := w.scopedToken("pat", "patient/Appointment.cus")

	for what, c := range map[string]struct {
		tok    string
		header []string
		status int
	}{
		"a stranger, no header":             {stranger, nil, 200},
		"the owner, no header":              {owner, nil, 200},
		"the owner naming its business":     {owner, []string{"X-Business-Id", mine}, 200},
		"a patient naming a business":       {patient, []string{"X-Business-Id", other}, 200},
		"the owner naming another":          {owner, []string{"X-Business-Id", other}, 404},
		"a stranger naming a business":      {stranger, []string{"X-Business-Id", mine}, 404},
		"a patient naming none that exists": {patient, []string{"X-Business-Id", "6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f"}, 404},
	} {
		r := s.do("GET", "/appointment", c.tok, nil, c.header...)
		if r.status != c.status || c.status == 404 && r.errorCode(t) != "business_not_found" {
			t.Errorf("%s: %d %s, want %d", what, r.status, r.body, c.status)
		}
	}
}
