package fhirtest_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// countingScheduler returns a Scheduler on srv through a proxy that
// counts the requests it forwards.
func countingScheduler(t *testing.T, srv *fhirtest.Server) (*fhir.Scheduler, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	front := srv.Front(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		n.Add(1)
		next.ServeHTTP(w, r)
	})
	client, err := ehrhttp.New(ehrhttp.Config{
		Name: "medplum", BaseURL: front, Timeout: 30 * time.Second,
		Auth: ehrhttp.AuthConfig{Type: ehrhttp.AuthAPIKey, APIKey: testAPIKey},
	})
	if err != nil {
		t.Fatal(err)
	}
	return fhir.NewScheduler(client), &n
}

// listAll pages through a listing of limit 100 and fails the test on a
// loss, a repeat, a page of the wrong size or a wrong totalCount; it
// returns the largest number of upstream requests one page took.
func listAll(t *testing.T, name string, want []string, n *atomic.Int64, list func(page int) ([]string, int, error)) int64 {
	t.Helper()
	seen := map[string]bool{}
	var most int64
	pages := (len(want) + ehr.MaxLimit - 1) / ehr.MaxLimit
	t0, n0 := time.Now(), n.Load()
	for page := 1; page <= pages+1; page++ {
		before := n.Load()
		ids, total, err := list(page)
		if err != nil {
			t.Fatalf("%s: page %d: %v", name, page, err)
		}
		most = max(most, n.Load()-before)
		if total != len(want) {
			t.Fatalf("%s: page %d: totalCount %d; want %d", name, page, total, len(want))
		}
		if wantLen := min(ehr.MaxLimit, max(len(want)-(page-1)*ehr.MaxLimit, 0)); len(ids) != wantLen {
			t.Fatalf("%s: page %d: %d items; want %d", name, page, len(ids), wantLen)
		}
		for _, id := range ids {
			if seen[id] {
				t.Fatalf("%s: page %d repeats %s", name, page, id)
			}
			seen[id] = true
		}
	}
	for _, id := range want {
		if !seen[id] {
			t.Fatalf("%s: %s never listed (%d of %d listed)", name, id, len(seen), len(want))
		}
	}
	t.Logf("%s: %d items in %d pages of %d: %d requests, at most %d a page, %s",
		name, len(want), pages+1, ehr.MaxLimit, n.Load()-n0, most, time.Since(t0).Round(time.Millisecond))
	return most
}

// 2,500 practitioners and 5,000 appointments on Medplum: every listing
// pages through everything with no loss or repeat and the right
// totalCount, and a page that the server can answer takes one request.
func TestIntegrationFHIRScheduler_ListingsAreExactAtScale(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey))
	start := time.Date(time.Now().Year()+1, 1, 1, 9, 0, 0, 0, time.UTC)
	t0 := time.Now()
	sc, err := srv.SeedScale(2500, 5000, start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded 2,500 practitioners with roles and 5,000 appointments in %s", time.Since(t0).Round(time.Millisecond))
	sch, n := countingScheduler(t, srv)
	ctx := t.Context()

	agents := func(f ehr.AgentFilter) func(int) ([]string, int, error) {
		return func(page int) ([]string, int, error) {
			f.Page, f.Limit = page, ehr.MaxLimit
			pg, err := sch.ListAgents(ctx, f)
			ids := make([]string, len(pg.Items))
			for i, a := range pg.Items {
				ids[i] = a.ID
			}
			return ids, pg.TotalCount, err
		}
	}
	if most := listAll(t, "agents", sc.Practitioners, n, agents(ehr.AgentFilter{})); most > 1 {
		t.Errorf("agents: a page took %d requests; want 1", most)
	}
	var named, specialty []string
	for i, id := range sc.Practitioners {
		if i >= 1000 && i < 2000 {
			named = append(named, id)
		}
		if i%7 == 3 {
			specialty = append(specialty, id)
		}
	}
	if len(named) != sc.Named {
		t.Fatalf("%d named, seeded %d", len(named), sc.Named)
	}
	if most := listAll(t, "agents by name", named, n, agents(ehr.AgentFilter{Name: fhirtest.ScaleName})); most > 1 {
		t.Errorf("agents by name: a page took %d requests; want 1", most)
	}
	// Specialty lives on PractitionerRole: every practitioner is read.
	listAll(t, "agents by specialty", specialty, n, agents(ehr.AgentFilter{Specialty: "scale specialty 3"}))

	appointments := func(f ehr.AppointmentFilter) func(int) ([]string, int, error) {
		return func(page int) ([]string, int, error) {
			f.Page, f.Limit = page, ehr.MaxLimit
			pg, err := sch.ListAppointments(ctx, f)
			ids := make([]string, len(pg.Items))
			for i, a := range pg.Items {
				ids[i] = a.ID
			}
			return ids, pg.TotalCount, err
		}
	}
	var all, inRange []string
	for i, pid := range sc.Practitioners {
		for j, id := range sc.Appointments[pid] {
			all = append(all, id)
			// Appointment k of the seed starts on day k; practitioner i
			// holds k = i + j*2500.
			if k := i + j*len(sc.Practitioners); k >= 1000 && k < 3000 {
				inRange = append(inRange, id)
			}
		}
	}
	if most := listAll(t, "appointments", all, n, appointments(ehr.AppointmentFilter{})); most > 1 {
		t.Errorf("appointments: a page took %d requests; want 1", most)
	}
	from, to := start.Add(1000*24*time.Hour), start.Add(3000*24*time.Hour)
	if most := listAll(t, "appointments by date", inRange, n, appointments(ehr.AppointmentFilter{From: from, To: to})); most > 1 {
		t.Errorf("appointments by date: a page took %d requests; want 1", most)
	}
	pid := sc.Practitioners[42]
	listAll(t, "appointments of one agent", sc.Appointments[pid], n, appointments(ehr.AppointmentFilter{AgentID: pid}))
}
