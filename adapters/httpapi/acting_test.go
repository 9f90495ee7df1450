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
type tenancyFunc func(ctx context.Context, requested string, use ehr.Use) (context.Context, string, error)

func (f tenancyFunc) Act(ctx context.Context, requested string, use ehr.Use) (context.Context, string, error) {
	return f(ctx, requested, use)
}

type actingMarker struct{}

func TestActing_TheHeaderNamesTheBusinessOfSearchAppointmentsAndAgents(t *testing.T) {
	const biz = "aaaaaaaa-0000-0000-0000-000000000001"
	type call struct {
		requested string
		use       ehr.Use
	}
	var calls []call
	tenancy := tenancyFunc(func(ctx context.Context, requested string, use ehr.Use) (context.Context, string, error) {
		calls = append(calls, call{requested, use})
		if requested == "bbbbbbbb-0000-0000-0000-000000000002" {
			return ctx, "", ehr.ErrBusinessNotFound
		}
		return context.WithValue(ctx, actingMarker{}, requested), requested, nil
	})
	var seen []any
	s := New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: &StorageMock{}, Business: &BusinessMock{},
		Search: &SearchMock{SearchFunc: func(ctx context.Context, _ ehr.SearchRequest) (*ehr.SearchResult, error) {
			seen = append(seen, ctx.Value(actingMarker{}))
			return &ehr.SearchResult{Status: ehr.StatusSuccess}, nil
		}},
		Scheduling: &SchedulingMock{
			AppointmentsFunc: func(ctx context.Context, _ ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
				seen = append(seen, ctx.Value(actingMarker{}))
				return ehr.Page[ehr.Appointment]{}, nil
			},
			AgentsFunc: func(ctx context.Context, _ ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
				seen = append(seen, ctx.Value(actingMarker{}))
				return ehr.Page[ehr.Agent]{}, nil
			},
		},
		Tenancy: tenancy, Registry: prometheus.NewRegistry(), Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
	requests := []struct {
		method, path, body string
		use                ehr.Use
	}{
		{http.MethodPost, "/api/v1/search", `{"query":"smith"}`, ehr.UseSearch},
		{http.MethodGet, "/appointment", "", ehr.UseAppointments},
		{http.MethodGet, "/agents", "", ehr.UseAgents},
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
		if w.Code != 200 || len(calls) != 1 || calls[0] != (call{biz, rq.use}) || len(seen) != 1 || seen[0] != biz {
			t.Errorf("%s %s: %d, policy asked %v, use case saw %v", rq.method, rq.path, w.Code, calls, seen)
		}
		w = do(t, s, rq.method, rq.path, strings.NewReader(rq.body), "Content-Type", "application/json", "X-Business-Id", "bbbbbbbb-0000-0000-0000-000000000002")
		if e := errEnvelope(t, w); w.Code != 404 || e.Code != "business_not_found" || len(seen) != 1 {
			t.Errorf("%s %s naming a business not its own: %d %s", rq.method, rq.path, w.Code, e.Code)
		}
		calls, seen = nil, nil
	}
}
