package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

func newIntegrationServer(t *testing.T, m *SchedulingMock) *Server {
	t.Helper()
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: &StorageMock{},
		Business: &BusinessMock{}, Search: &SearchMock{}, Scheduling: m, Registry: prometheus.NewRegistry(),
		Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
}

var chicagoTZ, _ = time.LoadLocation("America/Chicago")

var appt = ehr.Appointment{ID: "a-1", AgentID: "dr-1", Status: ehr.StatusBooked, Reason: "check-up", Source: "clinic", ExternalID: "a-1",
	Start: time.Date(2030, 3, 4, 9, 0, 0, 0, chicagoTZ), End: time.Date(2030, 3, 4, 9, 30, 0, 0, chicagoTZ),
	Patient: ehr.PatientContact{FirstName: "Ana", LastName: "Lopez", DateOfBirth: "1980-02-01", Email: "ana@example.com"}}

func TestBook_MapsTheRequestAndReplaysMark(t *testing.T) {
	var got ehr.BookingRequest
	replayed := false
	m := &SchedulingMock{BookFunc: func(_ context.Context, r ehr.BookingRequest) (ehr.Booked, error) {
		got = r
		return ehr.Booked{Appointment: appt, Replayed: replayed}, nil
	}}
	s := newIntegrationServer(t, m)
	body := `{"agentId":"dr-1","start":"2030-03-04T09:00:00-06:00","durationMinutes":30,"reason":"check-up","locationId":"main","patient":{"firstName":"Ana","lastName":"Lopez","dateOfBirth":"1980-02-01","email":"ana@example.com","phone":""}}`
	w := do(t, s, "POST", "/appointment/customer", strings.NewReader(body), "Content-Type", "application/json", "Idempotency-Key", "k-1")
	data := success(t, w, 201, "Appointment created successfully")
	if got.AgentID != "dr-1" || got.DurationMinutes != 30 || got.IdempotencyKey != "k-1" || got.Patient.LastName != "Lopez" || got.LocationID != "main" {
		t.Fatalf("core got %+v", got)
	}
	if data["start"] != "2030-03-04T09:00:00-06:00" || data["status"] != "booked" || data["locationId"] != nil || data["createdAt"] != nil ||
		data["patient"].(map[string]any)["firstName"] != "Ana" || w.Header().Get("Idempotency-Replayed") != "" {
		t.Fatalf("data %v", data)
	}
	replayed = true
	w = do(t, s, "POST", "/appointment/customer", strings.NewReader(body), "Content-Type", "application/json", "Idempotency-Key", "k-1")
	if w.Code != 201 || w.Header().Get("Idempotency-Replayed") != "true" {
		t.Fatalf("replay: %d %v", w.Code, w.Header())
	}
	w = do(t, s, "POST", "/appointment/customer", strings.NewReader(`{"agentId":"dr-1","when":"now"}`), "Content-Type", "application/json")
	if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_json" {
		t.Fatalf("unknown field: %d %s", w.Code, e.Code)
	}
}

func TestIntegration_ListingsAndErrors(t *testing.T) {
	var af ehr.AppointmentFilter
	var gf ehr.AgentFilter
	m := &SchedulingMock{
		AppointmentsFunc: func(_ context.Context, f ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
			af = f
			return ehr.Page[ehr.Appointment]{Items: []ehr.Appointment{appt}, TotalCount: 1, Page: 1, Limit: 20}, nil
		},
		AgentsFunc: func(_ context.Context, f ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
			gf = f
			return ehr.Page[ehr.Agent]{Items: []ehr.Agent{{ID: "dr-1", Name: "Dr One", Timezone: "America/Chicago"}}, TotalCount: 1, Page: 2, Limit: 5}, nil
		},
		AgentFunc: func(context.Context, string, string) (ehr.Agent, error) { return ehr.Agent{}, ehr.ErrAgentNotFound },
		AvailabilityFunc: func(_ context.Context, r ehr.AvailabilityRequest) (ehr.Availability, error) {
			return ehr.Availability{AgentID: r.AgentID, Timezone: "America/Chicago", Slots: []ehr.Period{{Start: appt.Start, End: appt.End}}}, nil
		},
		CancelFunc: func(_ context.Context, _, _, reason string) (ehr.Appointment, error) {
			if reason != "" && reason != "sick" {
				t.Errorf("reason %q", reason)
			}
			return ehr.Appointment{}, ehr.ErrAlreadyCancelled
		},
	}
	s := newIntegrationServer(t, m)
	data := success(t, do(t, s, "GET", "/appointment?agentId=dr-1&status=booked&from=2030-03-01&to=2030-03-31T00:00:00Z&patientEmail=ana@example.com&page=1&limit=20", nil), 200, "Appointments fetched successfully")
	if af.AgentID != "dr-1" || af.Status != ehr.StatusBooked || af.From.Day() != 1 || af.To.Day() != 31 || af.PatientEmail != "ana@example.com" || data["totalCount"] != 1.0 || len(data["items"].([]any)) != 1 {
		t.Fatalf("filter %+v, data %v", af, data)
	}
	data = success(t, do(t, s, "GET", "/agents?name=one&specialty=cardiology&locationId=main&page=2&limit=5", nil), 200, "Agents fetched successfully")
	if gf != (ehr.AgentFilter{Name: "one", Specialty: "cardiology", LocationID: "main", Page: 2, Limit: 5}) || data["items"].([]any)[0].(map[string]any)["locationIds"] == nil {
		t.Fatalf("filter %+v, data %v", gf, data)
	}
	data = success(t, do(t, s, "GET", "/agents/dr-1/availability?from=2030-03-04&to=2030-03-04&duration=30", nil), 200, "Agent availability fetched successfully")
	if data["timezone"] != "America/Chicago" || data["slots"].([]any)[0].(map[string]any)["start"] != "2030-03-04T09:00:00-06:00" {
		t.Fatalf("availability %v", data)
	}
	for path, code := range map[string]string{
		"/agents/dr-9":                         "agent_not_found",
		"/appointment?page=two":                "validation_failed",
		"/appointment?from=yesterday":          "validation_failed",
		"/agents/dr-1/availability?duration=x": "validation_failed",
	} {
		w := do(t, s, "GET", path, nil)
		if e := errEnvelope(t, w); e.Code != code {
			t.Errorf("%s: %d %s", path, w.Code, e.Code)
		}
	}
	w := do(t, s, "PUT", "/appointment/customer/a-1/cancel", nil)
	if e := errEnvelope(t, w); w.Code != 409 || e.Code != "appointment_cancelled" {
		t.Fatalf("cancel without body: %d %s", w.Code, e.Code)
	}
	w = do(t, s, "PUT", "/appointment/customer/a-1/cancel", strings.NewReader(`{"reason":"sick"}`), "Content-Type", "application/json")
	if w.Code != 409 || len(m.CancelCalls()) != 2 {
		t.Fatalf("cancel with a reason: %d", w.Code)
	}
	var body map[string]any
	json.Unmarshal(w.Body.Bytes(), &body)
	if body["status"] != "error" {
		t.Fatal("not the envelope")
	}
}

// The handlers parse the times of a request; one that does not parse goes
// to the core as a field problem (the core checks the caller first and
// reports it with the other fields), never as an early 400 of the handler.
func TestScheduling_TimesAreParsedAtTheEdgeAndBadOnesReachTheCore(t *testing.T) {
	var book ehr.BookingRequest
	var moved [2]ehr.Instant
	var dates [2]ehr.Date
	m := &SchedulingMock{
		BookFunc: func(_ context.Context, r ehr.BookingRequest) (ehr.Booked, error) {
			book = r
			return ehr.Booked{}, core.ErrInsufficientScope
		},
		RescheduleFunc: func(_ context.Context, r ehr.RescheduleRequest) (ehr.Appointment, error) {
			moved = [2]ehr.Instant{r.Start, r.End}
			return ehr.Appointment{}, core.ErrInsufficientScope
		},
		AvailabilityFunc: func(_ context.Context, r ehr.AvailabilityRequest) (ehr.Availability, error) {
			dates = [2]ehr.Date{r.From, r.To}
			return ehr.Availability{}, core.ErrInsufficientScope
		},
	}
	s := newIntegrationServer(t, m)
	body := `{"agentId":"dr-1","start":"2030-03-04T09:00:00.000-06:00","end":"half past nine"}`
	if w := do(t, s, "POST", "/appointment/customer", strings.NewReader(body), "Content-Type", "application/json"); w.Code != 403 {
		t.Fatalf("book: %d", w.Code)
	}
	want := time.Date(2030, 3, 4, 9, 0, 0, 0, chicagoTZ)
	if !book.Start.Time.Equal(want) || book.Start.Invalid || book.Start.Raw != "2030-03-04T09:00:00.000-06:00" ||
		!book.End.Invalid || book.End.Raw != "half past nine" {
		t.Fatalf("book got %+v", book)
	}
	if w := do(t, s, "POST", "/appointment/a-1/reschedule", strings.NewReader(`{"start":"2030-03-04 09:00"}`), "Content-Type", "application/json"); w.Code != 403 {
		t.Fatalf("reschedule: %d", w.Code)
	}
	if !moved[0].Invalid || moved[0].Raw != "2030-03-04 09:00" || moved[1] != (ehr.Instant{}) {
		t.Fatalf("reschedule got %+v", moved)
	}
	if w := do(t, s, "GET", "/agents/dr-1/availability?from=2030-02-30&to=2030-03-31", nil); w.Code != 403 {
		t.Fatalf("availability: %d", w.Code)
	}
	if dates != [2]ehr.Date{{}, {Year: 2030, Month: time.March, Day: 31}} {
		t.Fatalf("availability got %+v", dates)
	}
}
