package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
)

// tenancyFunc is a ports.Tenancy of one function.
type tenancyFunc func(ctx context.Context, requested string, use ehr.Use) (string, error)

func (f tenancyFunc) Act(ctx context.Context, requested string, use ehr.Use) (string, error) {
	return f(ctx, requested, use)
}

// actingScheduling is a Scheduling that notes in seen the business each
// call names.
func actingScheduling(seen *[]string) *SchedulingMock {
	note := func(business string) { *seen = append(*seen, business) }
	return &SchedulingMock{
		BookFunc: func(_ context.Context, r ehr.BookingRequest) (ehr.Booked, error) {
			note(r.Business)
			return ehr.Booked{}, nil
		},
		AppointmentsFunc: func(_ context.Context, f ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
			note(f.Business)
			return ehr.Page[ehr.Appointment]{}, nil
		},
		CancelFunc: func(_ context.Context, business, _, _ string) (ehr.Appointment, error) {
			note(business)
			return ehr.Appointment{}, nil
		},
		RescheduleFunc: func(_ context.Context, r ehr.RescheduleRequest) (ehr.Appointment, error) {
			note(r.Business)
			return ehr.Appointment{}, nil
		},
		AgentsFunc: func(_ context.Context, f ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
			note(f.Business)
			return ehr.Page[ehr.Agent]{}, nil
		},
		AgentFunc: func(_ context.Context, business, _ string) (ehr.Agent, error) {
			note(business)
			return ehr.Agent{}, nil
		},
		AvailabilityFunc: func(_ context.Context, r ehr.AvailabilityRequest) (ehr.Availability, error) {
			note(r.Business)
			return ehr.Availability{}, nil
		},
	}
}

// The business a use case is asked for is the one the policy resolved
// (here another id than the header's), never the header itself.
func TestActing_TheHeaderNamesTheBusinessOfSearchAppointmentsAndAgents(t *testing.T) {
	const biz, resolved = "aaaaaaaa-0000-0000-0000-000000000001", "cccccccc-0000-0000-0000-000000000003"
	type call struct {
		requested string
		use       ehr.Use
	}
	var calls []call
	tenancy := tenancyFunc(func(_ context.Context, requested string, use ehr.Use) (string, error) {
		calls = append(calls, call{requested, use})
		if requested == "bbbbbbbb-0000-0000-0000-000000000002" {
			return "", ehr.ErrBusinessNotFound
		}
		return resolved, nil
	})
	var seen []string
	s := New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: &StorageMock{}, Business: &BusinessMock{},
		Search: &SearchMock{SearchFunc: func(_ context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error) {
			seen = append(seen, r.Business)
			return &ehr.SearchResult{Status: ehr.StatusSuccess}, nil
		}},
		Scheduling: actingScheduling(&seen),
		Tenancy:    tenancy, Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
	requests := []struct {
		method, path, body string
		use                ehr.Use
		status             int
	}{
		{http.MethodPost, "/api/v1/search", `{"query":"smith"}`, ehr.UseSearch, 200},
		{http.MethodPost, "/appointment/customer", `{}`, ehr.UseBook, 201},
		{http.MethodGet, "/appointment", "", ehr.UseAppointments, 200},
		{http.MethodPut, "/appointment/customer/appt-1/cancel", "", ehr.UseChange, 200},
		{http.MethodPost, "/appointment/appt-1/reschedule", `{}`, ehr.UseChange, 200},
		{http.MethodGet, "/agents", "", ehr.UseAgents, 200},
		{http.MethodGet, "/agents/dr-1", "", ehr.UseAgents, 200},
		{http.MethodGet, "/agents/dr-1/availability", "", ehr.UseAgents, 200},
	}
	for _, rq := range requests {
		for _, bad := range []string{"nope", biz + "0", strings.Replace(biz, "-", "x", 1), "{" + biz[1:] + "}"} {
			w := do(t, s, rq.method, rq.path, strings.NewReader(rq.body), "Content-Type", "application/json", "X-Business-Id", bad)
			if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_business_id" {
				t.Errorf("%s %s with X-Business-Id %q: %d %s", rq.method, rq.path, bad, w.Code, e.Code)
			}
		}
		if len(calls) != 0 {
			t.Fatalf("a malformed header reached the policy: %v", calls)
		}
		w := do(t, s, rq.method, rq.path, strings.NewReader(rq.body), "Content-Type", "application/json", "X-Business-Id", biz)
		if w.Code != rq.status || len(calls) != 1 || calls[0] != (call{biz, rq.use}) || len(seen) != 1 || seen[0] != resolved {
			t.Errorf("%s %s: %d, policy asked %v, use case saw %v", rq.method, rq.path, w.Code, calls, seen)
		}
		w = do(t, s, rq.method, rq.path, strings.NewReader(rq.body), "Content-Type", "application/json", "X-Business-Id", "bbbbbbbb-0000-0000-0000-000000000002")
		if e := errEnvelope(t, w); w.Code != 404 || e.Code != "business_not_found" || len(seen) != 1 {
			t.Errorf("%s %s naming a business not its own: %d %s", rq.method, rq.path, w.Code, e.Code)
		}
		calls, seen = nil, nil
	}
}
