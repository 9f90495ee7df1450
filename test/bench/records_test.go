package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Targets of the record search (issue 20, "Measure (bench)").
const (
	recordsSlack  = 20 * time.Millisecond // cold: at most the slowest EHR's full paging + this
	recordsP99    = 3 * time.Millisecond  // cached p99
	recordsRSSMiB = 50                    // service RSS during the cold searches above idle

	recordsPerEHR      = 500 // observations of the one person in each EHR
	recordsShared      = 200 // of them, held by all three EHRs (same code, same day)
	recordsCold        = 10
	recordsCeilingRuns = 5
	recordsPageMax     = 100 // the largest _count a fake EHR honours

	recordsMRN    = "MRN-BENCH-4711"
	recordsScopes = "user/Patient.rs user/Observation.rs"
)

// BenchmarkRecords measures a record search (recordType observation) for
// one person held by three fake FHIR EHRs answering in 50, 80 and 120 ms,
// each with 500 observations of that person (200 of them in all three):
// the ceiling (the slowest EHR's patient search and every Observation page
// read directly), cold searches through the service (each a cache miss:
// another caller each time), cached searches under load, and the
// service's RSS at idle and during the cold searches.
func BenchmarkRecords(b *testing.B) {
	delays := []time.Duration{50 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond}
	var ehrs []*recordsEHR
	for i, d := range delays {
		ehrs = append(ehrs, newRecordsEHR(b, i, d))
	}
	e := setup(b, "SEARCH_RATE_LIMIT=0", "SEARCH_CACHE_TTL=10m", "EHR_CONFIG="+recordsConfig(b, ehrs), "BENCH_KEY=bench-key")
	e.token = e.tokenFor("bench", recordsScopes)
	body := func(page int) string {
		return fmt.Sprintf(`{"query":"identifier:%s","filters":{"recordType":"observation"},"pagination":{"page":%d,"limit":20}}`, recordsMRN, page)
	}

	ceiling := recordsCeiling(b, ehrs[len(ehrs)-1])
	tokens := make([]string, recordsCold+1)
	for i := range tokens {
		tokens[i] = e.tokenFor(fmt.Sprintf("bench-cold-%d", i), recordsScopes)
	}
	// Warm-up: the first cold search opens the connections to the EHRs;
	// its caller's cached answer is then read once.
	first := e.recordSearch(tokens[0], body(1), false)
	e.recordSearch(tokens[0], body(2), true)
	pid := e.server.Process.Pid
	time.Sleep(2 * time.Second) // let the warm-up's garbage go
	idle := procStatusKiB(pid, "VmRSS")
	hwmBefore := procStatusKiB(pid, "VmHWM")
	reset := resetPeakRSS(pid)

	stop := e.sampleRSS()
	var cold []time.Duration
	for _, tok := range tokens[1:] {
		t0 := time.Now()
		a := e.recordSearch(tok, body(1), false)
		cold = append(cold, time.Since(t0))
		if a.total != first.total {
			b.Fatalf("cold search answered %d records, the first %d", a.total, first.total)
		}
	}
	sampled := stop()
	hwm := procStatusKiB(pid, "VmHWM")
	slices.Sort(cold)
	coldMedian, coldMax := cold[len(cold)/2], cold[len(cold)-1]

	e.recordSearch(e.token, body(1), false)
	e.recordSearch(e.token, body(1), true)
	sat, err := e.wrkPost("/api/v1/search", body(1), cachedClients, cachedDuration)
	if err != nil {
		b.Fatalf("wrk: %v", err)
	}
	light := e.paced(cachedRate, cachedDuration, func() error {
		if status, hit := e.searchOnce(body(1)); status != 200 || !hit {
			return fmt.Errorf("status %d, cacheHit %v", status, hit)
		}
		return nil
	})

	peak := max(sampled, hwm)
	if !reset { // VmHWM is the peak since start: only the samples are of the cold searches
		peak = max(sampled, min(hwm, hwmBefore))
	}
	grow := kib2mib(peak - idle)
	coldOK, p99OK, rssOK := coldMedian <= ceiling+recordsSlack, light.pct(99) < recordsP99, grow < recordsRSSMiB
	fmt.Printf("\nRecord search: one person, %d observations in each of three fake FHIR EHRs answering in 50, 80 and 120 ms (%d in all three); merged into %d records\n",
		recordsPerEHR, recordsShared, first.total)
	fmt.Printf("ceiling: the 120 ms EHR's patient search + %d Observation pages read directly (median of %d): %s\n",
		(recordsPerEHR+recordsPageMax-1)/recordsPageMax, recordsCeilingRuns, ceiling.Round(100*time.Microsecond))
	fmt.Printf("cold record search (%d, each a cache miss): median %s, max %s; target <= ceiling + %s = %s: %s\n",
		len(cold), coldMedian.Round(100*time.Microsecond), coldMax.Round(100*time.Microsecond), recordsSlack,
		(ceiling + recordsSlack).Round(100*time.Microsecond), pass(coldOK))
	fmt.Printf("cached record search, page 1 of 20, saturated (wrk, %d connections, %s): %.0f req/s, p50 %s, p99 %s\n",
		cachedClients, cachedDuration, sat.rate(), sat.pct(50), sat.pct(99))
	fmt.Printf("cached record search at a steady %d req/s (Go client, latency from the scheduled start): %.0f req/s, p50 %s, p99 %s (target < %s: %s)\n",
		cachedRate, light.rate(), light.pct(50), light.pct(99), recordsP99, pass(p99OK))
	fmt.Printf("service RSS: idle %.1f MiB, peak during the cold searches %.1f MiB (sampled every 5 ms %.1f, VmHWM %.1f%s): +%.1f MiB (target < %d: %s)\n",
		kib2mib(idle), kib2mib(peak), kib2mib(sampled), kib2mib(hwm), hwmNote(reset), grow, recordsRSSMiB, pass(rssOK))
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(ceiling), "ceiling-ms")
	b.ReportMetric(ms(coldMedian), "cold-median-ms")
	b.ReportMetric(ms(coldMax), "cold-max-ms")
	b.ReportMetric(sat.rate(), "cached-req/s")
	b.ReportMetric(ms(light.pct(99)), "cached-p99-ms")
	b.ReportMetric(grow, "rss-growth-MiB")
	if sat.errors+light.errors > 0 {
		b.Errorf("%d cached record searches failed", sat.errors+light.errors)
	}
	if os.Getenv("BENCH_STRICT") == "1" && !(coldOK && p99OK && rssOK) {
		b.Error("a target was missed (BENCH_STRICT=1)")
	}
}

func hwmNote(reset bool) string {
	if reset {
		return ", reset before them"
	}
	return ", not resettable: since start"
}

// recordsConfig writes the EHR systems file of ehrs and returns its path.
func recordsConfig(b *testing.B, ehrs []*recordsEHR) string {
	var yaml strings.Builder
	yaml.WriteString("ehr_systems:\n")
	for i, f := range ehrs {
		fmt.Fprintf(&yaml, "  - name: ehr%d\n    adapter: fhir\n    base_url: %s/fhir\n    authentication: { type: api_key, api_key: \"env:BENCH_KEY\" }\n    timeout: 5000\n", i+1, f.srv.URL)
	}
	file := filepath.Join(b.TempDir(), "ehr.yaml")
	if err := os.WriteFile(file, []byte(yaml.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return file
}

// recordAnswer is what the bench reads of a record search's answer.
type recordAnswer struct {
	total int
	hit   bool
}

// recordSearch posts body as the caller of token and fails the bench
// unless the answer is a success with records and hit is its cacheHit.
func (e *world) recordSearch(token, body string, hit bool) recordAnswer {
	e.b.Helper()
	req, _ := http.NewRequest("POST", e.base+"/api/v1/search", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a struct {
		Status string
		Data   struct{ TotalCount int }
		Meta   struct{ CacheHit bool } `json:"metadata"`
	}
	if err := json.Unmarshal(raw, &a); err != nil || resp.StatusCode != 200 || a.Status != "success" ||
		a.Data.TotalCount == 0 || a.Meta.CacheHit != hit {
		e.b.Fatalf("record search (cacheHit %v wanted): %d %.500s", hit, resp.StatusCode, raw)
	}
	return recordAnswer{total: a.Data.TotalCount, hit: a.Meta.CacheHit}
}

// tokenFor returns a dev-mode token of subject sub with scope.
func (e *world) tokenFor(sub, scope string) string {
	e.b.Helper()
	tok := exec.Command(e.bin, "dev-token", "--sub", sub, "--scope", scope, "--ttl", "3h")
	tok.Env = e.env
	out, err := tok.Output()
	if err != nil {
		e.b.Fatalf("dev-token: %v\n%s", err, stderrOf(err))
	}
	return strings.TrimSpace(string(out))
}
