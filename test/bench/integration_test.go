package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// Targets of the integration issue.
const (
	peerDelay       = 20 * time.Millisecond
	bookingP50      = 25 * time.Millisecond
	bookings        = 60
	botConcurrency  = 64
	botDuration     = 5 * time.Second
	botRateTarget   = 3000
	bookingAdvance  = 48 * time.Hour
	bookingDuration = 30 * time.Minute

	scalePractitioners = 2500
	scaleAppointments  = 5000
	agentsPageCalls    = 50
	agentsPageP50      = 100 * time.Millisecond
	agentsPageRequests = 2
)

// BenchmarkIntegration measures a booking's round trip through each
// adapter against a local peer that answers in 20 ms, and the WebSocket
// bot client's throughput with 64 concurrent calls over one link.
func BenchmarkIntegration(b *testing.B) {
	base := time.Now().Add(bookingAdvance).Truncate(time.Hour)
	appt := func(i int) ehr.Appointment {
		start := base.Add(time.Duration(i) * bookingDuration)
		return ehr.Appointment{AgentID: "dr-1", Start: start, End: start.Add(bookingDuration), Status: ehr.StatusBooked, Reason: "bench",
			Patient: ehr.PatientContact{FirstName: "Bo", LastName: "Chen", DateOfBirth: "1985-07-01", Email: "bo@example.com"}}
	}

	// WebSocket bot.
	bot := wsbottest.Start(b)
	bot.AddAgent(ehr.Agent{ID: "dr-1", Name: "Dr One", Timezone: "UTC"}, []ehr.Period{{Start: base.Add(-time.Hour), End: base.Add(1000 * time.Hour)}})
	client, err := wsbot.New(wsbot.Config{Name: "bot", URL: bot.URL()})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	if _, err := client.GetAgent(b.Context(), "dr-1"); err != nil { // opens the link
		b.Fatal(err)
	}
	bot.SetDelay("appointments.create", peerDelay)
	wsLat := timeBookings(b, func(i int) error { _, err := client.CreateAppointment(b.Context(), appt(i)); return err })
	bot.SetDelay("appointments.create", 0)

	// Throughput: 64 callers over the one link, no peer delay.
	var calls atomic.Int64
	var failed atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(botDuration)
	start := time.Now()
	for range botConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				if _, err := client.GetAgent(b.Context(), "dr-1"); err != nil {
					failed.Add(1)
					continue
				}
				calls.Add(1)
			}
		}()
	}
	wg.Wait()
	rate := float64(calls.Load()) / time.Since(start).Seconds()

	// FHIR: a peer that stores each posted Appointment after 20 ms.
	peer := slowFHIR(b, peerDelay)
	doer, err := ehrhttp.New(ehrhttp.Config{Name: "fhir", BaseURL: peer.URL, Timeout: 5 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	sch := fhir.NewScheduler(doer)
	fhirLat := timeBookings(b, func(i int) error { _, err := sch.CreateAppointment(b.Context(), appt(i+bookings)); return err })

	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	fmt.Printf("\nEHR integration: booking round trip through each adapter, peer answering in %s (%d bookings)\n", peerDelay, bookings)
	for _, r := range []struct {
		name string
		lat  []time.Duration
	}{{"wsbot", wsLat}, {"fhir", fhirLat}} {
		p50, p99 := r.lat[len(r.lat)/2], r.lat[len(r.lat)*99/100]
		fmt.Printf("%-6s p50 %s, p99 %s (target p50 < %s: %s)\n", r.name, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), bookingP50, verdict(p50 < bookingP50))
		b.ReportMetric(float64(p50.Microseconds())/1000, r.name+"-booking-p50-ms")
	}
	fmt.Printf("wsbot throughput: %d concurrent calls over one link for %s: %.0f calls/s, %d failed (target >= %d: %s)\n",
		botConcurrency, botDuration, rate, failed.Load(), botRateTarget, verdict(rate >= botRateTarget))
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate, "wsbot-calls/s")
	if failed.Load() > 0 {
		b.Errorf("%d bot calls failed", failed.Load())
	}
}

// BenchmarkFHIRAgentsPage measures page 1 of the agent listing (the
// default limit) through the FHIR adapter on Medplum holding 2,500
// practitioners with their roles and 5,000 appointments: the upstream
// requests a call takes and its p50.
func BenchmarkFHIRAgentsPage(b *testing.B) {
	srv := fhirtest.Start(b)
	t0 := time.Now()
	if _, err := srv.SeedScale(scalePractitioners, scaleAppointments, time.Now().Add(bookingAdvance).Truncate(time.Hour)); err != nil {
		b.Fatal(err)
	}
	seeded := time.Since(t0)
	var requests atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		req, err := http.NewRequestWithContext(r.Context(), r.Method, srv.URL()+r.URL.RequestURI(), r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	b.Cleanup(front.Close)
	doer, err := ehrhttp.New(ehrhttp.Config{Name: "medplum", BaseURL: front.URL, Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	sch := fhir.NewScheduler(doer)
	lat := make([]time.Duration, 0, agentsPageCalls)
	requests.Store(0)
	for range agentsPageCalls {
		t0 := time.Now()
		pg, err := sch.ListAgents(b.Context(), ehr.AgentFilter{Page: 1})
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		if pg.TotalCount != scalePractitioners || len(pg.Items) != ehr.DefaultLimit {
			b.Fatalf("page 1: %d items, totalCount %d; want %d, %d", len(pg.Items), pg.TotalCount, ehr.DefaultLimit, scalePractitioners)
		}
	}
	slices.Sort(lat)
	perCall := float64(requests.Load()) / agentsPageCalls
	p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
	verdict := "PASS"
	if p50 >= agentsPageP50 || perCall > agentsPageRequests {
		verdict = "FAIL"
	}
	fmt.Printf("\nFHIR agent listing: page 1 (limit %d) on Medplum with %d practitioners and %d appointments (seeded in %s), %d calls\n",
		ehr.DefaultLimit, scalePractitioners, scaleAppointments, seeded.Round(time.Millisecond), agentsPageCalls)
	fmt.Printf("upstream requests a call %.1f, p50 %s, p99 %s (target <= %d requests, p50 < %s: %s)\n",
		perCall, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), agentsPageRequests, agentsPageP50, verdict)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(p50.Microseconds())/1000, "agents-page-p50-ms")
	b.ReportMetric(perCall, "upstream-requests/op")
}

func timeBookings(b *testing.B, book func(i int) error) []time.Duration {
	b.Helper()
	lat := make([]time.Duration, 0, bookings)
	for i := range bookings {
		t0 := time.Now()
		if err := book(i); err != nil {
			b.Fatalf("booking %d: %v", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	return lat
}

// slowFHIR answers POST /Appointment after delay with the posted resource,
// given an id and a version.
func slowFHIR(b *testing.B, delay time.Duration) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		var res map[string]any
		raw, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || json.Unmarshal(raw, &res) != nil {
			http.Error(w, "only POST Appointment", http.StatusBadRequest)
			return
		}
		res["id"] = fmt.Sprint("appt-", n.Add(1))
		res["meta"] = map[string]any{"versionId": "1", "lastUpdated": time.Now().UTC().Format(time.RFC3339)}
		w.Header().Set("Content-Type", "application/fhir+json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(res)
	}))
	b.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}
