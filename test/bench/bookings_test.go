package bench

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// The bookings issue's figures: 200 agents booked at once against an EHR
// whose round trip of one booking (calendar check and create) takes 1.5 s.
const (
	bookAgents   = 200
	bookEHRTrip  = 1500 * time.Millisecond
	bookDuration = 20 * time.Second
	bookSlot     = 15 * time.Minute
	// bookTarget: at least 0.8 of what the EHR allows, 200 / 1.5 s.
	bookTarget = 0.8 * bookAgents / 1.5
)

// BenchmarkBookings books without pause from 200 clients, each its own
// agent, for 20 s, against the WebSocket bot (in this process) delaying
// each calendar check and each create by 0.75 s; four other clients read
// GET /business/:id meanwhile. It prints bookings/s against the EHR's
// ceiling (200 / 1.5 s) and the reads' latency.
func BenchmarkBookings(b *testing.B) {
	bot := wsbottest.Start(b)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 2)
	agents := make([]string, bookAgents)
	for i := range agents {
		agents[i] = bot.AddAgent(ehr.Agent{ID: fmt.Sprintf("dr-%03d", i), FirstName: "Dr", LastName: fmt.Sprint(i), Name: fmt.Sprintf("Dr %d", i), Timezone: "UTC"},
			[]ehr.Period{{Start: day, End: day.AddDate(0, 0, 30)}})
	}
	bot.SetDelay("agents.availability", bookEHRTrip/2)
	bot.SetDelay("appointments.create", bookEHRTrip/2)
	dir := b.TempDir()
	file := filepath.Join(dir, "ehr.yaml")
	yaml := fmt.Sprintf("ehr_systems:\n  - name: bot\n    adapter: wsbot\n    base_url: %s\n    timeout: 30000\nintegration:\n  ehr: bot\n", bot.URL())
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	e := setup(b, "EHR_CONFIG="+file, "EHR_CREDENTIALS_KEY="+strings.Repeat("ab", 32))
	biz, _ := e.seedBusiness()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: bookAgents + 8}}
	call := func(method, path, body string, hdr ...string) (int, error) {
		req, _ := http.NewRequest(method, e.base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}

	var (
		booked, refused atomic.Int64
		firstErr        atomic.Value
		stop            = make(chan struct{})
		wg              sync.WaitGroup
	)
	start := time.Now()
	for i, agent := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ; k++ {
				select {
				case <-stop:
					return
				default:
				}
				at := day.Add(time.Duration(k) * bookSlot)
				body := fmt.Sprintf(`{"agentId":%q,"start":%q,"durationMinutes":15,"reason":"bench","patient":{"firstName":"Bench","lastName":"P%d","dateOfBirth":"1980-01-01","email":"p%d@bench.example"}}`,
					agent, at.Format(time.RFC3339), i, i)
				status, err := call("POST", "/appointment/customer", body)
				if err == nil && status != http.StatusCreated {
					err = fmt.Errorf("booking answered %d", status)
				}
				if err != nil {
					refused.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				booked.Add(1)
			}
		}()
	}
	var mu sync.Mutex
	var reads []time.Duration
	readErrs := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				status, err := call("GET", "/business/"+biz, "", "user-type", "business")
				d := time.Since(t0)
				mu.Lock()
				if err != nil || status != http.StatusOK {
					readErrs++
				} else {
					reads = append(reads, d)
				}
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	time.Sleep(bookDuration)
	close(stop)
	elapsed := time.Since(start)
	wg.Wait()

	rate := float64(booked.Load()) / elapsed.Seconds()
	slices.Sort(reads)
	pct := func(p float64) time.Duration {
		if len(reads) == 0 {
			return 0
		}
		return reads[min(int(float64(len(reads))*p), len(reads)-1)]
	}
	ceiling := bookAgents / bookEHRTrip.Seconds()
	fmt.Printf("\nBookings: %d clients, each booking its own agent without pause for %v; the EHR takes %v a booking (calendar check + create)\n",
		bookAgents, bookDuration, bookEHRTrip)
	fmt.Printf("booked %d (%.1f/s), refused or failed %d; the EHR's ceiling %.1f/s; %.2f of it (target >= 0.80: %.1f/s) %s\n",
		booked.Load(), rate, refused.Load(), ceiling, rate/ceiling, bookTarget, map[bool]string{true: "PASS", false: "FAIL"}[rate >= bookTarget])
	fmt.Printf("GET /business/:id meanwhile (4 clients): %d answered, %d failed, p50 %v, p99 %v, max %v\n",
		len(reads), readErrs, pct(0.50), pct(0.99), pct(1))
	if err, _ := firstErr.Load().(error); err != nil {
		fmt.Printf("first failure: %v\n", err)
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(rate, "bookings/s")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "read-p99-ms")
}
