package fhir_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
)

// newScheduler returns a Scheduler on f through the real ehrhttp client,
// which retries retries times without waiting.
func newScheduler(t *testing.T, f *fakeFHIR, retries int, opts ...fhir.SchedulerOption) *fhir.Scheduler {
	t.Helper()
	c, err := ehrhttp.New(ehrhttp.Config{Name: "clinic-a", BaseURL: f.URL, RetryAttempts: retries, Timeout: 5 * time.Second},
		ehrhttp.WithSleep(func(ctx context.Context, _ time.Duration) error { return ctx.Err() }))
	if err != nil {
		t.Fatal(err)
	}
	return fhir.NewScheduler(c, opts...)
}

func TestScheduler_Contract(t *testing.T) {
	ehrtest.TestScheduler(t, func(t *testing.T) ehrtest.Backend {
		f := newFakeFHIR(t)
		return ehrtest.Backend{
			Scheduler: newScheduler(t, f, 0),
			AddAgent:  func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return f.addAgent(a, free) },
		}
	})
}

// A server that ignores every search parameter but paging (and _revinclude)
// and pages by three: the adapter filters, finds roles by a second search
// and follows next links itself.
func TestScheduler_ContractOnALenientServer(t *testing.T) {
	ehrtest.TestScheduler(t, func(t *testing.T) ehrtest.Backend {
		f := newFakeFHIR(t)
		f.pageSize, f.revinclude = 3, "ignore"
		for _, p := range []string{"_id", "name", "practitioner", "actor", "schedule", "status", "start", "date"} {
			f.ignored[p] = true
		}
		return ehrtest.Backend{
			Scheduler: newScheduler(t, f, 0),
			AddAgent:  func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return f.addAgent(a, free) },
		}
	})
}

func TestScheduler_ContractWhenRevincludeIsRefused(t *testing.T) {
	ehrtest.TestScheduler(t, func(t *testing.T) ehrtest.Backend {
		f := newFakeFHIR(t)
		f.revinclude = "refuse"
		return ehrtest.Backend{
			Scheduler: newScheduler(t, f, 0),
			AddAgent:  func(t *testing.T, a ehr.Agent, free []ehr.Period) string { return f.addAgent(a, free) },
		}
	})
}

// day is 1 January of next year, 00:00 UTC.
var day = time.Date(time.Now().Year()+1, 1, 1, 0, 0, 0, 0, time.UTC)

func at(h, m int) time.Time {
	return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
}

func period(h1, m1, h2, m2 int) ehr.Period { return ehr.Period{Start: at(h1, m1), End: at(h2, m2)} }

func testAgent() ehr.Agent {
	return ehr.Agent{FirstName: "Ana", LastName: "Lopez", Name: "Ana Lopez", Specialty: "Cardiology",
		Email: "ana@clinic.example", Timezone: "Europe/Madrid", LocationIDs: []string{"loc-1"}}
}

func booking(agentID string, start time.Time, minutes int) ehr.Appointment {
	return ehr.Appointment{
		AgentID: agentID, Start: start, End: start.Add(time.Duration(minutes) * time.Minute),
		Reason: "Check-up", LocationID: "loc-1",
		Patient: ehr.PatientContact{FirstName: "Jo", LastName: "Doe", DateOfBirth: "1990-05-06",
			Email: "jo@example.org", Phone: "+15550100"},
	}
}

// requestsTo returns the logged requests that start with prefix
// ("GET /Slot?").
func requestsTo(f *fakeFHIR, prefix string) []string {
	var out []string
	for _, r := range f.got() {
		if strings.HasPrefix(r, prefix) {
			out = append(out, r)
		}
	}
	return out
}

func query(t *testing.T, request string) url.Values {
	t.Helper()
	_, raw, _ := strings.Cut(request, "?")
	q, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func TestListAgents_SendsTheNameAndRevincludesRoles(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), nil)
	f.add(map[string]any{"resourceType": "Practitioner", "active": false, "name": []any{map[string]any{"family": "Lopez"}}})
	s := newScheduler(t, f, 0)
	pg, err := s.ListAgents(context.Background(), ehr.AgentFilter{Name: "ana  LOPEZ", Page: 1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := testAgent()
	want.ID = id
	if pg.TotalCount != 1 || len(pg.Items) != 1 || !reflect.DeepEqual(pg.Items[0], want) {
		t.Errorf("page = %+v, want only %+v (the inactive practitioner left out)", pg, want)
	}
	reqs := requestsTo(f, "GET /Practitioner?")
	if len(reqs) != 1 {
		t.Fatalf("practitioner searches = %v", f.got())
	}
	wantQ := url.Values{"name": {"ana", "lopez"}, "active:not": {"false"}, "_revinclude": {"PractitionerRole:practitioner"},
		"_count": {"10"}, "_offset": {"0"}, "_total": {"accurate"}}
	if q := query(t, reqs[0]); !reflect.DeepEqual(q, wantQ) {
		t.Errorf("query = %v, want %v", q, wantQ)
	}
	if n := len(requestsTo(f, "GET /PractitionerRole")); n != 0 {
		t.Errorf("%d role searches, want none (roles came included)", n)
	}
}

func TestListAgents_FindsRolesBySecondSearchWhenRevincludeIsIgnoredOrRefused(t *testing.T) {
	for _, mode := range []string{"ignore", "refuse"} {
		t.Run(mode, func(t *testing.T) {
			f := newFakeFHIR(t)
			f.revinclude = mode
			id := f.addAgent(testAgent(), nil)
			s := newScheduler(t, f, 0)
			for range 2 {
				a, err := s.GetAgent(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				if a.Specialty != "Cardiology" || !reflect.DeepEqual(a.LocationIDs, []string{"loc-1"}) {
					t.Errorf("agent = %+v, want its role's specialty and location", a)
				}
			}
			roles := requestsTo(f, "GET /PractitionerRole?")
			if len(roles) != 2 || query(t, roles[0]).Get("practitioner") != "Practitioner/"+id {
				t.Errorf("role searches = %v", roles)
			}
			withRev := 0
			for _, r := range requestsTo(f, "GET /Practitioner?") {
				if query(t, r).Has("_revinclude") {
					withRev++
				}
			}
			if want := map[string]int{"ignore": 2, "refuse": 1}[mode]; withRev != want {
				t.Errorf("%d searches with _revinclude, want %d (a refusal is remembered)", withRev, want)
			}
		})
	}
}

func TestGetAgent_UnknownOrInvalidIDIsAgentNotFound(t *testing.T) {
	f := newFakeFHIR(t)
	s := newScheduler(t, f, 0)
	for _, id := range []string{"nobody", "", "a/b", "x?y=1", strings.Repeat("a", 65)} {
		if _, err := s.GetAgent(context.Background(), id); !errors.Is(err, ehr.ErrAgentNotFound) {
			t.Errorf("GetAgent(%q) = %v, want ErrAgentNotFound", id, err)
		}
	}
	if n := len(f.got()); n != 1 {
		t.Errorf("%d requests, want 1 (invalid ids are not sent): %v", n, f.got())
	}
}

func TestFreePeriods_MergesSlotsAndSubtractsHeldAppointments(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), []ehr.Period{
		period(9, 0, 10, 0), period(10, 0, 11, 0), // adjacent: one period
		period(13, 0, 15, 0), period(14, 0, 16, 0), // overlapping
	})
	other := f.addAgent(testAgent(), []ehr.Period{period(9, 0, 17, 0)})
	appt := func(agent, status string, h1, m1, h2, m2 int, participantStatus string) {
		f.add(map[string]any{"resourceType": "Appointment", "status": status,
			"start": at(h1, m1).Format(time.RFC3339), "end": at(h2, m2).Format(time.RFC3339),
			"participant": []any{map[string]any{"actor": map[string]any{"reference": "Practitioner/" + agent}, "status": participantStatus}}})
	}
	appt(id, "booked", 9, 30, 9, 45, "accepted")
	appt(id, "mystery", 10, 30, 10, 45, "accepted") // unknown status: holds the time
	appt(id, "cancelled", 13, 0, 14, 0, "accepted")
	appt(id, "noshow", 14, 0, 14, 30, "accepted")
	appt(id, "entered-in-error", 14, 30, 15, 0, "accepted")
	appt(id, "booked", 15, 0, 15, 30, "declined")
	appt(other, "booked", 15, 30, 16, 0, "accepted")
	// A busy slot and an inactive schedule's free slot do not count.
	f.add(map[string]any{"resourceType": "Slot", "schedule": map[string]any{"reference": "Schedule/sch-3"},
		"status": "busy", "start": at(11, 0).Format(time.RFC3339), "end": at(12, 0).Format(time.RFC3339)})
	inactive := f.add(map[string]any{"resourceType": "Schedule", "active": false,
		"actor": []any{map[string]any{"reference": "Practitioner/" + id}}})
	f.add(map[string]any{"resourceType": "Slot", "schedule": map[string]any{"reference": "Schedule/" + inactive},
		"status": "free", "start": at(18, 0).Format(time.RFC3339), "end": at(19, 0).Format(time.RFC3339)})

	s := newScheduler(t, f, 0)
	got, err := s.FreePeriods(context.Background(), id, at(0, 0), at(24, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []ehr.Period{period(9, 0, 9, 30), period(9, 45, 10, 30), period(10, 45, 11, 0), period(13, 0, 16, 0)}
	if !samePeriods(got, want) {
		t.Errorf("free = %v\nwant   %v", got, want)
	}

	slots := requestsTo(f, "GET /Slot?")
	if len(slots) != 1 {
		t.Fatalf("slot searches = %v", slots)
	}
	q := query(t, slots[0])
	wantQ := url.Values{"schedule": {"Schedule/sch-3"}, "status": {"free"}, "_count": {"100"},
		"start": {"ge" + at(0, 0).Add(-fhir.MaxSlotLength).Format(time.RFC3339), "lt" + at(24, 0).Format(time.RFC3339)}}
	if !reflect.DeepEqual(q, wantQ) {
		t.Errorf("slot query = %v\nwant %v", q, wantQ)
	}
	appts := requestsTo(f, "GET /Appointment?")
	if len(appts) != 1 {
		t.Fatalf("appointment searches = %v", appts)
	}
	wantQ = url.Values{"actor": {"Practitioner/" + id}, "_count": {"100"},
		"date": {"ge" + at(0, 0).Add(-fhir.MaxSlotLength).Format(time.RFC3339), "lt" + at(24, 0).Format(time.RFC3339)}}
	if q := query(t, appts[0]); !reflect.DeepEqual(q, wantQ) {
		t.Errorf("appointment query = %v\nwant %v", q, wantQ)
	}
}

func samePeriods(a, b []ehr.Period) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Start.Equal(b[i].Start) || !a[i].End.Equal(b[i].End) {
			return false
		}
	}
	return true
}

func TestFreePeriods_ClipsAndSeesWhatBeganBeforeTheRange(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), []ehr.Period{{Start: at(-3, 0), End: at(12, 0)}})
	f.add(map[string]any{"resourceType": "Appointment", "status": "booked",
		"start": at(-1, 0).Format(time.RFC3339), "end": at(9, 0).Format(time.RFC3339),
		"participant": []any{map[string]any{"actor": map[string]any{"reference": "Practitioner/" + id}, "status": "accepted"}}})
	s := newScheduler(t, f, 0)
	got, err := s.FreePeriods(context.Background(), id, at(8, 0), at(10, 0))
	if err != nil {
		t.Fatal(err)
	}
	if want := []ehr.Period{period(9, 0, 10, 0)}; !samePeriods(got, want) {
		t.Errorf("free = %v, want %v", got, want)
	}
}

func TestFreePeriods_NoScheduleIsNeverFreeAndUnknownAgentIsNotFound(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.add(map[string]any{"resourceType": "Practitioner", "name": []any{map[string]any{"family": "X"}}})
	s := newScheduler(t, f, 0)
	got, err := s.FreePeriods(context.Background(), id, at(0, 0), at(24, 0))
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("FreePeriods(no schedule) = %#v, %v; want empty", got, err)
	}
	for _, missing := range []string{"nobody", "../Patient/1"} {
		if _, err := s.FreePeriods(context.Background(), missing, at(0, 0), at(24, 0)); !errors.Is(err, ehr.ErrAgentNotFound) {
			t.Errorf("FreePeriods(%q) = %v, want ErrAgentNotFound", missing, err)
		}
	}
}

func TestCreateAppointment_SendsAConditionalCreateOfABookedAppointment(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), []ehr.Period{period(9, 0, 17, 0)})
	s := newScheduler(t, f, 0)
	in := booking(id, at(10, 0), 30)
	in.Status = ehr.StatusPending // the port books: status booked whatever is given
	before := time.Now()
	got, err := s.CreateAppointment(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	stored := f.resources["Appointment"]
	if len(stored) != 1 {
		t.Fatalf("%d appointments stored", len(stored))
	}
	res := stored[0]
	if got.ID != res["id"] || got.ExternalID != got.ID || got.Source != "clinic-a" || got.Status != ehr.StatusBooked {
		t.Errorf("created = %+v", got)
	}
	if got.CreatedAt.Before(before.Add(-time.Second)) || got.CreatedAt.After(time.Now()) || got.UpdatedAt.IsZero() {
		t.Errorf("createdAt %v, updatedAt %v", got.CreatedAt, got.UpdatedAt)
	}
	if res["status"] != "booked" || res["description"] != "Check-up" {
		t.Errorf("stored = %v", res)
	}
	ids := list(res["identifier"])
	if len(ids) != 1 {
		t.Fatalf("identifier = %v", res["identifier"])
	}
	ident := ids[0].(map[string]any)
	value, _ := ident["value"].(string)
	if ident["system"] != fhir.IdentifierSystem || !strings.HasPrefix(value, "urn:uuid:") {
		t.Errorf("identifier = %v", ident)
	}
	posts := requestsTo(f, "POST /Appointment")
	if len(posts) != 1 {
		t.Fatalf("posts = %v", posts)
	}
	h := f.gotRequests()[0].Header
	if h.Get("Content-Type") != "application/fhir+json" || h.Get("Prefer") != "return=representation" {
		t.Errorf("headers = %v", h)
	}
	cond, err := url.ParseQuery(h.Get("If-None-Exist"))
	if err != nil || cond.Get("identifier") != fhir.IdentifierSystem+"|"+value || len(cond) != 1 {
		t.Errorf("If-None-Exist = %q, want identifier=%s|%s", h.Get("If-None-Exist"), fhir.IdentifierSystem, value)
	}
}

func TestCreateAppointment_ARetriedPOSTBooksOnce(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), nil)
	posts := 0
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPost {
			return false
		}
		posts++
		if posts > 1 {
			return false
		}
		f.handle(httptest.NewRecorder(), r, body) // stored, but the answer is lost
		writeFHIR(w, http.StatusServiceUnavailable, `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"transient"}]}`)
		return true
	}
	s := newScheduler(t, f, 2)
	got, err := s.CreateAppointment(context.Background(), booking(id, at(10, 0), 30))
	if err != nil {
		t.Fatal(err)
	}
	if posts != 2 || f.count("Appointment") != 1 {
		t.Errorf("%d posts, %d appointments; want 2 posts and 1 appointment", posts, f.count("Appointment"))
	}
	if got.ID != f.resources["Appointment"][0]["id"] {
		t.Errorf("created %q, stored %v", got.ID, f.resources["Appointment"][0]["id"])
	}
}

func TestCreateAppointment_ReadsBackAnAnswerWithoutBody(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), nil)
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPost {
			return false
		}
		rec := httptest.NewRecorder()
		f.handle(rec, r, body)
		w.Header().Set("Location", rec.Header().Get("Location"))
		w.WriteHeader(rec.Code)
		return true
	}
	s := newScheduler(t, f, 0)
	got, err := s.CreateAppointment(context.Background(), booking(id, at(10, 0), 30))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID == "" || got.Patient.Email != "jo@example.org" {
		t.Errorf("created = %+v", got)
	}
	if reads := requestsTo(f, "GET /Appointment/"+got.ID); len(reads) != 1 {
		t.Errorf("reads = %v", f.got())
	}
}

func TestCreateAppointment_RefusesAnAnswerThatIsAnotherAppointment(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), nil)
	s := newScheduler(t, f, 0)
	if _, err := s.CreateAppointment(context.Background(), booking(id, at(10, 0), 30)); err != nil {
		t.Fatal(err)
	}
	f.ignored["identifier"] = true // If-None-Exist now matches the first appointment
	_, err := s.CreateAppointment(context.Background(), booking(id, at(11, 0), 30))
	if e := coreError(t, err); e.Kind != core.KindBadGateway || !strings.Contains(e.Message, "not the one sent") {
		t.Errorf("err = %v", err)
	}
}

func TestCreateAppointment_MapsRefusals(t *testing.T) {
	f := newFakeFHIR(t)
	id := f.addAgent(testAgent(), nil)
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodPost {
			f.outcome(w, http.StatusConflict, "Slot already booked")
			return true
		}
		return false
	}
	s := newScheduler(t, f, 0)
	_, err := s.CreateAppointment(context.Background(), booking(id, at(10, 0), 30))
	if !errors.Is(err, ehr.ErrAgentUnavailable) {
		t.Errorf("409: err = %v, want ErrAgentUnavailable", err)
	}

	bad := booking("a/b", at(10, 0), 30)
	if _, err := s.CreateAppointment(context.Background(), bad); !errors.Is(err, ehr.ErrAgentNotFound) {
		t.Errorf("agent a/b: err = %v", err)
	}
	bad = booking(id, at(10, 0), 30)
	bad.LocationID = "loc 1"
	if _, err := s.CreateAppointment(context.Background(), bad); !errors.Is(err, ehr.ErrInvalidAppointment) {
		t.Errorf("location 'loc 1': err = %v", err)
	}
	bad = booking(id, at(10, 0), 0)
	if _, err := s.CreateAppointment(context.Background(), bad); !errors.Is(err, ehr.ErrInvalidAppointment) {
		t.Errorf("empty period: err = %v", err)
	}
	if n := len(requestsTo(f, "POST")); n != 1 {
		t.Errorf("%d posts, want 1", n)
	}
}

// richFamily is the family name of richAppointment's patient: a marker no
// log line holds by chance.
const richFamily = "Doe-Zqxmarkerfamily"

// richAppointment is an Appointment another system wrote, with elements
// the scheduler does not model.
func richAppointment(f *fakeFHIR, agentID, status string) string {
	return f.add(map[string]any{
		"resourceType": "Appointment",
		"status":       status,
		"extension":    []any{map[string]any{"url": "urn:x", "valueString": "keep me"}},
		"serviceType":  []any{map[string]any{"text": "Consultation"}},
		"slot":         []any{map[string]any{"reference": "Slot/s1"}},
		"start":        at(10, 0).Format(time.RFC3339),
		"end":          at(10, 30).Format(time.RFC3339),
		"participant": []any{
			map[string]any{"actor": map[string]any{"reference": "Practitioner/" + agentID}, "status": "accepted", "required": "required"},
			map[string]any{"actor": map[string]any{"reference": "Patient/p1", "display": "Jo " + richFamily}, "status": "accepted"},
		},
	})
}

func TestCancelAppointment_PutsWithIfMatchAndKeepsUnknownElements(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "booked")
	s := newScheduler(t, f, 0)
	got, err := s.CancelAppointment(context.Background(), id, "Patient request")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.Status != ehr.StatusCancelled || got.Patient.LastName != richFamily {
		t.Errorf("cancelled = %+v", got)
	}
	res := f.get("Appointment", id)
	if res["status"] != "cancelled" || !reflect.DeepEqual(res["cancelationReason"], map[string]any{"text": "Patient request"}) {
		t.Errorf("stored status %v, reason %v", res["status"], res["cancelationReason"])
	}
	for _, k := range []string{"extension", "serviceType", "slot"} {
		if res[k] == nil {
			t.Errorf("the update dropped %s", k)
		}
	}
	if p := list(res["participant"])[0].(map[string]any); p["required"] != "required" {
		t.Errorf("the update changed a participant: %v", p)
	}
	puts := 0
	for i, r := range f.got() {
		if strings.HasPrefix(r, "PUT /Appointment/"+id) {
			puts++
			if h := f.gotRequests()[i].Header; h.Get("If-Match") != `W/"1"` || h.Get("Content-Type") != "application/fhir+json" {
				t.Errorf("PUT headers = %v", h)
			}
		}
	}
	if puts != 1 {
		t.Errorf("%d PUTs", puts)
	}

	if _, err := s.CancelAppointment(context.Background(), id, ""); !errors.Is(err, ehr.ErrAlreadyCancelled) {
		t.Errorf("cancel again: err = %v, want ErrAlreadyCancelled", err)
	}
}

func TestCancelAppointment_RereadsOnceWhenTheVersionMoved(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "booked")
	puts := 0
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodPut {
			puts++
			if puts == 1 { // someone else writes first
				f.mu.Lock()
				f.find("Appointment", id)["meta"] = map[string]any{"versionId": "2"}
				f.find("Appointment", id)["comment"] = "edited elsewhere"
				f.mu.Unlock()
			}
		}
		return false
	}
	s := newScheduler(t, f, 0)
	got, err := s.CancelAppointment(context.Background(), id, "r")
	if err != nil {
		t.Fatal(err)
	}
	res := f.get("Appointment", id)
	if puts != 2 || got.Status != ehr.StatusCancelled || res["comment"] != "edited elsewhere" {
		t.Errorf("%d PUTs, status %s, stored %v", puts, got.Status, res)
	}
}

func TestCancelAppointment_ASecondConflictIsAConflict(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "booked")
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method == http.MethodPut {
			f.outcome(w, http.StatusPreconditionFailed, "version conflict")
			return true
		}
		return false
	}
	s := newScheduler(t, f, 0)
	_, err := s.CancelAppointment(context.Background(), id, "r")
	if e := coreError(t, err); e.Kind != core.KindConflict {
		t.Errorf("err = %v, want a conflict", err)
	}
	if n := len(requestsTo(f, "PUT")); n != 2 {
		t.Errorf("%d PUTs, want 2", n)
	}
}

// A PUT whose answer was lost is retried by ehrhttp; the server refuses the
// retry (the version moved: the first went through), and the re-read shows
// the appointment cancelled — by us: that is success, not "already
// cancelled".
func TestCancelAppointment_ARetriedPUTThatWentThroughIsSuccess(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "booked")
	puts := 0
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if r.Method != http.MethodPut {
			return false
		}
		puts++
		if puts == 1 {
			f.handle(httptest.NewRecorder(), r, body)
			writeFHIR(w, http.StatusBadGateway, `{"resourceType":"OperationOutcome","issue":[]}`)
			return true
		}
		return false
	}
	s := newScheduler(t, f, 1)
	got, err := s.CancelAppointment(context.Background(), id, "r")
	if err != nil || got.Status != ehr.StatusCancelled {
		t.Errorf("cancel = %+v, %v", got, err)
	}
}

func TestRescheduleAppointment_MovesAndKeepsTheStatus(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "arrived")
	s := newScheduler(t, f, 0)
	start := at(15, 0).In(time.FixedZone("", -3*3600))
	got, err := s.RescheduleAppointment(context.Background(), id, start, start.Add(45*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != ehr.StatusCheckedIn || !got.Start.Equal(start) || !got.End.Equal(start.Add(45*time.Minute)) {
		t.Errorf("moved = %+v", got)
	}
	res := f.get("Appointment", id)
	if res["start"] != start.Format(time.RFC3339) || res["status"] != "arrived" || res["slot"] == nil {
		t.Errorf("stored = %v", res)
	}

	cancelled := richAppointment(f, "prac-1", "entered-in-error")
	if _, err := s.RescheduleAppointment(context.Background(), cancelled, at(9, 0), at(9, 30)); !errors.Is(err, ehr.ErrAlreadyCancelled) {
		t.Errorf("reschedule a cancelled one: err = %v", err)
	}
	if _, err := s.RescheduleAppointment(context.Background(), id, at(9, 30), at(9, 0)); !errors.Is(err, ehr.ErrInvalidAppointment) {
		t.Errorf("end before start: err = %v", err)
	}
}

func TestAppointments_UnknownOrInvalidIDIsAppointmentNotFound(t *testing.T) {
	f := newFakeFHIR(t)
	s := newScheduler(t, f, 0)
	ctx := context.Background()
	for _, id := range []string{"nope", "a/../b", ""} {
		if _, err := s.GetAppointment(ctx, id); !errors.Is(err, ehr.ErrAppointmentNotFound) {
			t.Errorf("GetAppointment(%q) = %v", id, err)
		}
		if _, err := s.CancelAppointment(ctx, id, ""); !errors.Is(err, ehr.ErrAppointmentNotFound) {
			t.Errorf("CancelAppointment(%q) = %v", id, err)
		}
		if _, err := s.RescheduleAppointment(ctx, id, at(9, 0), at(9, 30)); !errors.Is(err, ehr.ErrAppointmentNotFound) {
			t.Errorf("RescheduleAppointment(%q) = %v", id, err)
		}
	}
	if n := len(f.got()); n != 3 {
		t.Errorf("%d requests, want 3 (only the valid id is sent): %v", n, f.got())
	}
}

func TestListAppointments_SendsTheFiltersAndMapsTheStatusToItsCodes(t *testing.T) {
	f := newFakeFHIR(t)
	s := newScheduler(t, f, 0)
	from := at(8, 0).In(time.FixedZone("", 3600)).Add(300 * time.Millisecond)
	for _, tt := range []struct {
		status ehr.AppointmentStatus
		codes  string
	}{
		{ehr.StatusBooked, "booked"},
		{ehr.StatusCheckedIn, "arrived,checked-in"},
		{ehr.StatusFulfilled, "fulfilled"},
		{ehr.StatusCancelled, "cancelled,entered-in-error"},
		{ehr.StatusNoShow, "noshow"},
		{ehr.StatusPending, ""}, // unknown codes read as pending: filtered here
	} {
		n := len(f.got())
		_, err := s.ListAppointments(context.Background(), ehr.AppointmentFilter{AgentID: "p-1", Status: tt.status,
			From: from, To: at(18, 0), PatientEmail: "x@y.org", Page: 1, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		reqs := f.got()[n:]
		want := url.Values{"actor": {"Practitioner/p-1"}, "_count": {"100"},
			"date": {"ge" + at(8, 0).Format(time.RFC3339), "lt" + at(18, 0).Format(time.RFC3339)}}
		if tt.codes != "" {
			want.Set("status", tt.codes)
		}
		if len(reqs) != 1 || !strings.HasPrefix(reqs[0], "GET /Appointment?") || !reflect.DeepEqual(query(t, reqs[0]), want) {
			t.Errorf("%s: requests = %v, want one with %v", tt.status, reqs, want)
		}
	}
}

func TestListAppointments_UnknownStatusIsPendingAndLogged(t *testing.T) {
	f := newFakeFHIR(t)
	id := richAppointment(f, "prac-1", "in-consultation")
	var buf bytes.Buffer
	s := newScheduler(t, f, 0, fhir.WithLogger(slog.New(slog.NewJSONHandler(&buf, nil))))
	pg, err := s.ListAppointments(context.Background(), ehr.AppointmentFilter{Status: ehr.StatusPending})
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Items) != 1 || pg.Items[0].ID != id || pg.Items[0].Status != ehr.StatusPending {
		t.Errorf("page = %+v", pg)
	}
	if !strings.Contains(buf.String(), "in-consultation") || strings.Contains(buf.String(), richFamily) {
		t.Errorf("log = %s", buf.String())
	}
}

func TestScheduler_ReportsUpstreamFailures(t *testing.T) {
	tests := []struct {
		name   string
		answer func(w http.ResponseWriter)
		kind   core.Kind
		code   string
		text   string
	}{
		{"500 with OperationOutcome", func(w http.ResponseWriter) { writeFHIR(w, 500, outcome500) },
			core.KindBadGateway, "ehr_error", "Database connection lost"},
		{"429", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "3"); writeFHIR(w, 429, "") },
			core.KindRateLimited, "rate_limited", "429"},
		{"401", func(w http.ResponseWriter) { writeFHIR(w, 401, "") }, core.KindBadGateway, "ehr_unauthorized", "401"},
		{"not JSON", func(w http.ResponseWriter) { writeFHIR(w, 200, "<html>") }, core.KindBadGateway, "ehr_bad_response", "not valid JSON"},
		{"a Patient, not a Bundle", func(w http.ResponseWriter) { writeFHIR(w, 200, patientJSON("1")) },
			core.KindBadGateway, "ehr_bad_response", "it is a Patient, not a Bundle"},
		{"a malformed entry", func(w http.ResponseWriter) {
			writeFHIR(w, 200, bundleOf("", `{"resourceType":"Practitioner","id":"1","name":"Doe"}`))
		}, core.KindBadGateway, "ehr_bad_response", "entry 0 is not a valid Practitioner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeFHIR(t)
			f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool { tt.answer(w); return true }
			s := newScheduler(t, f, 0)
			_, err := s.ListAgents(context.Background(), ehr.AgentFilter{})
			e := coreError(t, err)
			if e.Kind != tt.kind || e.Code != tt.code || !strings.Contains(e.Message, "clinic-a") || !strings.Contains(e.Message, tt.text) {
				t.Errorf("err = %v; want kind %v, code %s, text %q", err, tt.kind, tt.code, tt.text)
			}
		})
	}
}

func TestScheduler_ReadsOfAnotherTypeAreBadResponses(t *testing.T) {
	f := newFakeFHIR(t)
	f.intercept = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		writeFHIR(w, 200, patientJSON("x"))
		return true
	}
	s := newScheduler(t, f, 0)
	_, err := s.GetAppointment(context.Background(), "x")
	if e := coreError(t, err); e.Code != "ehr_bad_response" || !strings.Contains(e.Message, "it is a Patient, not an Appointment") {
		t.Errorf("err = %v", err)
	}
}
