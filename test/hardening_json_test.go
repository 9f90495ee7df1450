package test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// measured is s.do that also returns what the process allocated from
// sending the request to reading the answer: as the service runs in this
// process, mostly what it allocated to answer. The answer is checked
// against the API document after the count.
func (s *server) measured(method, path, token string, body []byte, header ...string) (response, uint64) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.base+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	s.checkDocumented(req, resp, b)
	return response{status: resp.StatusCode, header: resp.Header, body: b}, after.TotalAlloc - before.TotalAlloc
}

// botWorld is a world with an app whose search and integration EHR is a
// WebSocket bot with one agent, dr-ana.
func botWorld(t *testing.T) (*world, *server) {
	t.Helper()
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	return w, w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
}

func TestHardening_DeepJSONIsRefusedEverywhereWithBoundedMemory(t *testing.T) {
	w, s := botWorld(t)
	tok := w.token("alice")
	biz := w.createBusiness("alice")
	loc := w.seedLocation("alice")

	const mib = 1 << 20
	bodies := map[string][]byte{
		"[":     bytes.Repeat([]byte("["), mib),
		`{"a":`: bytes.Repeat([]byte(`{"a":`), mib/5),
	}
	jsonEndpoints := []struct{ method, path string }{
		{"POST", "/api/v1/search"},
		{"POST", "/appointment/customer"},
		{"PUT", "/appointment/customer/some-appointment/cancel"},
		{"POST", "/appointment/some-appointment/reschedule"},
		{"PATCH", "/business/" + biz},
		{"POST", "/business/operating-hours/add"},
		{"PUT", "/business/operating-hours/update"},
		{"DELETE", "/business/operating-hours/delete"},
	}
	refused := func(what string, r response) {
		t.Helper()
		if code := r.errorCode(t); r.status != 400 || code != "invalid_json" || !strings.Contains(string(r.body), "deeper than 64") {
			t.Errorf("%s: %d %s", what, r.status, r.body)
		}
	}
	var total uint64
	for _, e := range jsonEndpoints {
		for kind, body := range bodies {
			what := fmt.Sprintf("%s %s, 1 MiB of %s", e.method, e.path, kind)
			r, n := s.measured(e.method, e.path, tok, body, "Content-Type", "application/json", "user-type", "business")
			refused(what, r)
			t.Logf("%s: %.2f MiB allocated", what, float64(n)/mib)
			if n > 4*mib {
				t.Errorf("%s: %.2f MiB allocated to refuse it", what, float64(n)/mib)
			}
			total += n
		}
	}
	// The location form's JSON-valued groups, at most 4 KiB each.
	for _, path := range []string{"/business/location/" + biz, fmt.Sprintf("/business/location/%d/update", loc)} {
		method := map[bool]string{true: "PUT", false: "POST"}[strings.HasSuffix(path, "/update")]
		for _, group := range []string{"generalInfo", "address"} {
			form, ct := multipartBody(t, field{group, strings.Repeat("[", 4<<10)})
			r, n := s.measured(method, path, tok, form.Bytes(), "Content-Type", ct, "user-type", "business")
			refused(method+" "+path+" "+group, r)
			total += n
		}
	}
	t.Logf("all: %.1f MiB allocated", float64(total)/mib)
	if total > 64*mib {
		t.Errorf("%.1f MiB allocated to refuse them all", float64(total)/mib)
	}
}

// Go's decoder matches keys to fields whatever their case; the contract
// makes a key that names no field (and a repeated one) a 400.
func TestHardening_KeysInAnotherCaseAreRefused(t *testing.T) {
	w, s := botWorld(t)
	tok := w.token("alice")
	biz := w.createBusiness("alice")
	for _, c := range []struct{ method, path, body, want string }{
		{"PATCH", "/business/" + biz, `{"name":"A","NAME":"B"}`, `Unknown field \"NAME\"`},
		{"PATCH", "/business/" + biz, `{"Name":"A"}`, `Unknown field \"Name\"`},
		{"POST", "/appointment/customer", `{"agentId":"dr-ana","Patient":{"email":"a@x.org"}}`, `Unknown field \"Patient\"`},
		{"POST", "/api/v1/search", `{"QUERY":"Smith"}`, `Unknown field \"QUERY\"`},
	} {
		r := s.do(c.method, c.path, tok, strings.NewReader(c.body), "Content-Type", "application/json", "user-type", "business")
		if r.status != 400 || r.errorCode(t) != "invalid_json" || !strings.Contains(string(r.body), c.want) {
			t.Errorf("%s %s %s: %d %s", c.method, c.path, c.body, r.status, r.body)
		}
	}
	if r := s.do("GET", "/business/"+biz, tok, nil, "user-type", "business"); !strings.Contains(string(r.body), `"name"`) || strings.Contains(string(r.body), `"name":"A"`) {
		t.Errorf("the business changed: %s", r.body)
	}
}

func TestHardening_PageAbove10000IsRefusedOnEveryListing(t *testing.T) {
	w, s := botWorld(t)
	staff, patient := w.token("reception"), w.scopedToken("ana", "patient/Appointment.cus")
	if r, _ := s.ehrCall("POST", "/appointment/customer", patient, slotAt("dr-ana", 9, 30)); r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	search := func(page string) string { return `{"query":"family:Okafor","pagination":{"page":` + page + `}}` }
	for _, c := range []struct{ who, token, method, path string }{
		{"staff", staff, "GET", "/appointment"},
		{"patient", patient, "GET", "/appointment"}, // the patient's own, paged by Carebridge
		{"staff", staff, "GET", "/agents"},
		{"staff", staff, "POST", "/api/v1/search"},
	} {
		for page, want := range map[string]int{"10000": 200, "10001": 400, "9223372036854775807": 400, "99999999999999999999": 400} {
			var r response
			if c.method == "GET" {
				r = s.do(c.method, c.path+"?limit=100&page="+page, c.token, nil)
			} else {
				r = s.do(c.method, c.path, c.token, strings.NewReader(search(page)), "Content-Type", "application/json")
			}
			if r.status != want || want == 400 && r.errorCode(t) == "" {
				t.Errorf("%s %s %s page=%s: %d %s", c.who, c.method, c.path, page, r.status, r.body)
			}
		}
	}
}

func TestHardening_AnswersWithPatientOrEHRDataAreNotCached(t *testing.T) {
	w, s := botWorld(t)
	tok := w.token("alice")
	type answer struct {
		what         string
		r            response
		status       int
		cacheControl string
	}
	call := func(method, path, body string) answer {
		r := s.do(method, path, tok, strings.NewReader(body), "Content-Type", "application/json")
		return answer{what: method + " " + path, r: r, status: 200, cacheControl: "no-store"}
	}
	booked := call("POST", "/appointment/customer", slotAt("dr-ana", 9, 30))
	booked.status = 201
	if booked.r.status != 201 {
		t.Fatalf("book: %d %s", booked.r.status, booked.r.body)
	}
	id := booked.r.json(t)["data"].(map[string]any)["id"].(string)
	uploaded := answer{"upload", s.upload(tok, fileFields("notes.txt", "text/plain", []byte("some notes"))...), 201, "no-store"}
	if uploaded.r.status != 201 {
		t.Fatalf("upload: %d %s", uploaded.r.status, uploaded.r.body)
	}
	blob := fmt.Sprint(uploaded.r.json(t)["id"])
	day := timeAt(0, 0)[:10]
	download := call("GET", "/cloud-blob/download/"+blob, "")
	download.cacheControl = "private, no-store"
	refused := call("GET", "/appointment?page=0x10", "")
	refused.status = 400 // an error of these endpoints is not cached either
	for _, a := range []answer{
		booked,
		uploaded,
		call("POST", "/api/v1/search", `{"query":"family:Okafor"}`),
		call("GET", "/appointment", ""),
		call("POST", "/appointment/"+id+"/reschedule", fmt.Sprintf(`{"start":%q,"end":%q}`, timeAt(11, 0), timeAt(11, 30))),
		call("PUT", "/appointment/customer/"+id+"/cancel", `{"reason":"better"}`),
		call("GET", "/agents", ""),
		call("GET", "/agents/dr-ana", ""),
		call("GET", "/agents/dr-ana/availability?from="+day+"&to="+day, ""),
		call("GET", "/cloud-blob/metadata/"+blob, ""),
		download,
		call("DELETE", "/cloud-blob/"+blob, ""),
		refused,
	} {
		if got := a.r.header.Get("Cache-Control"); a.r.status != a.status || got != a.cacheControl {
			t.Errorf("%s: %d, Cache-Control %q, want %q: %.200s", a.what, a.r.status, got, a.cacheControl, a.r.body)
		}
	}
}
