package test

import (
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/wsbottest"
)

const searchBody = `{"query":"Ana","searchType":"patient_record"}`

// wantInsufficientScope checks a 403 insufficient_scope naming scope in
// WWW-Authenticate.
func wantInsufficientScope(t *testing.T, what string, r response, scope string) {
	t.Helper()
	if r.status != 403 || r.errorCode(t) != "insufficient_scope" ||
		r.header.Get("WWW-Authenticate") != `Bearer error="insufficient_scope", scope="`+scope+`"` {
		t.Fatalf("%s: %d %q %s, want 403 insufficient_scope naming %s", what, r.status, r.header.Get("WWW-Authenticate"), r.body, scope)
	}
}

func TestAccess_SearchNeedsPatientSearchScope(t *testing.T) {
	w := newWorld(t)
	a, b := twoEHRs(t)
	cfg, _ := ehrFile(t, 2000, a, b)
	s := w.start(func(c *app.Config) { c.EHR = cfg })

	for _, tok := range []string{
		w.scopedToken("u", ""),
		w.scopedToken("u", "openid profile"),
		w.scopedToken("u", "patient/Patient.rs patient/Appointment.cruds"), // a patient may not search others
		w.scopedToken("u", "user/Patient.r"),                               // read is not search
		w.issuer.Sign(t, withClaim(w.issuer.Claims("u", audience, time.Hour), "scope", 42)),
		w.issuer.Sign(t, withClaim(w.issuer.Claims("u", audience, time.Hour), "scp", map[string]any{"user/Patient.rs": true})),
	} {
		r, _ := s.search(tok, searchBody)
		wantInsufficientScope(t, "search", r, "user/Patient.rs")
	}
	if a.calls.Load()+b.calls.Load() != 0 {
		t.Fatal("a search without the scope reached an EHR")
	}
	for _, tok := range []string{
		w.scopedToken("u", "user/Patient.rs"),
		w.scopedToken("u", "system/Patient.read"),
		w.issuer.Sign(t, withClaim(w.issuer.Claims("u", audience, time.Hour), "scp", []string{"user/Patient.s"})),
	} {
		if r, ans := s.search(tok, searchBody); r.status != 200 || ans.Data.TotalCount == 0 {
			t.Fatalf("search with the scope: %d %s", r.status, r.body)
		}
	}
}

func withClaim(c map[string]any, k string, v any) map[string]any {
	c[k] = v
	return c
}

func TestAccess_PatientsReachOnlyTheirOwnAppointments(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })

	const patientScopes = "patient/Appointment.cus"
	ana, ben := w.scopedToken("ana", patientScopes), w.scopedToken("ben", patientScopes)
	staff := w.token("reception")

	r, mine := s.ehrCall("POST", "/appointment/customer", ana, slotAt("dr-ana", 9, 30), "Idempotency-Key", "ana-1")
	if r.status != 201 {
		t.Fatalf("ana books: %d %s", r.status, r.body)
	}
	r, theirs := s.ehrCall("POST", "/appointment/customer", ben, slotAt("dr-ana", 10, 30))
	if r.status != 201 {
		t.Fatalf("ben books: %d %s", r.status, r.body)
	}
	if r, _ := s.ehrCall("POST", "/appointment/customer", staff, slotAt("dr-ana", 11, 30)); r.status != 201 {
		t.Fatalf("staff books: %d %s", r.status, r.body)
	}

	// Ana sees her own only, with the filters applied within them.
	r, page := s.ehrCall("GET", "/appointment", ana, "")
	items, _ := page["items"].([]any)
	if r.status != 200 || page["totalCount"] != 1.0 || len(items) != 1 || items[0].(map[string]any)["id"] != mine["id"] {
		t.Fatalf("ana's list: %d %s", r.status, r.body)
	}
	if r, page := s.ehrCall("GET", "/appointment?status=cancelled", ana, ""); r.status != 200 || page["totalCount"] != 0.0 {
		t.Fatalf("ana's cancelled: %d %s", r.status, r.body)
	}
	if r, page := s.ehrCall("GET", "/appointment", staff, ""); r.status != 200 || page["totalCount"] != 3.0 {
		t.Fatalf("staff see every appointment: %d %s", r.status, r.body)
	}

	// Ben's appointment and a made-up one are both not found for Ana.
	for _, id := range []string{theirs["id"].(string), "no-such-appointment"} {
		if r := s.do("PUT", "/appointment/customer/"+id+"/cancel", ana, nil); r.status != 404 || r.errorCode(t) != "appointment_not_found" {
			t.Fatalf("ana cancels %s: %d %s", id, r.status, r.body)
		}
		body := `{"start":"` + timeAt(14, 0) + `","end":"` + timeAt(14, 30) + `"}`
		if r := s.do("POST", "/appointment/"+id+"/reschedule", ana, strings.NewReader(body), "Content-Type", "application/json"); r.status != 404 {
			t.Fatalf("ana moves %s: %d %s", id, r.status, r.body)
		}
	}
	if r, a := s.ehrCall("PUT", "/appointment/customer/"+mine["id"].(string)+"/cancel", ana, ""); r.status != 200 || a["status"] != "cancelled" {
		t.Fatalf("ana cancels her own: %d %s", r.status, r.body)
	}
	// Her Idempotency-Key replays the appointment as the EHR has it now.
	r, again := s.ehrCall("POST", "/appointment/customer", ana, slotAt("dr-ana", 9, 30), "Idempotency-Key", "ana-1")
	if r.status != 201 || r.header.Get("Idempotency-Replayed") != "true" || again["id"] != mine["id"] || again["status"] != "cancelled" ||
		again["patient"].(map[string]any)["lastName"] != "Chen" {
		t.Fatalf("replay: %d %s", r.status, r.body)
	}
	if r, a := s.ehrCall("PUT", "/appointment/customer/"+theirs["id"].(string)+"/cancel", staff, ""); r.status != 200 || a["status"] != "cancelled" {
		t.Fatalf("staff cancel anyone's: %d %s", r.status, r.body)
	}
}

func TestAccess_AppointmentsNeedTheirScope(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	_, booked := s.ehrCall("POST", "/appointment/customer", w.token("reception"), slotAt("dr-ana", 9, 30))
	id := booked["id"].(string)

	for _, tok := range []string{w.scopedToken("u", ""), w.scopedToken("u", "user/Patient.rs user/Appointment.r")} {
		wantInsufficientScope(t, "book", s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt("dr-ana", 12, 30)), "Content-Type", "application/json"), "user/Appointment.c")
		wantInsufficientScope(t, "list", s.do("GET", "/appointment", tok, nil), "user/Appointment.s")
		wantInsufficientScope(t, "cancel", s.do("PUT", "/appointment/customer/"+id+"/cancel", tok, nil), "user/Appointment.u")
		wantInsufficientScope(t, "reschedule", s.do("POST", "/appointment/"+id+"/reschedule", tok,
			strings.NewReader(`{"start":"`+timeAt(14, 0)+`","end":"`+timeAt(14, 30)+`"}`), "Content-Type", "application/json"), "user/Appointment.u")
		// Agents need only a valid token.
		if r := s.do("GET", "/agents", tok, nil); r.status != 200 {
			t.Fatalf("agents: %d %s", r.status, r.body)
		}
		if r := s.do("GET", "/agents/dr-ana", tok, nil); r.status != 200 {
			t.Fatalf("agent: %d %s", r.status, r.body)
		}
	}
}
