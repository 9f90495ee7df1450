package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkSearchBaseline compares cached searches of this build with
// those of an earlier build (BASELINE_BIN, made by `make bench-baseline`
// from the commit BASELINE) side by side: the same fake EHRs as
// BenchmarkSearch, each service on a database of its own, four
// alternating rounds of wrk with 8 connections per side, without and then
// with X-Business-Id (a member acting for its practice: the practice's
// person links are read on every search). It prints the medians and their
// ratio (the matching issue's target: at least 0.90).
func BenchmarkSearchBaseline(b *testing.B) {
	baseline := os.Getenv("BASELINE_BIN")
	if baseline == "" {
		b.Skip("BASELINE_BIN not set: run make bench-baseline")
	}
	var yaml strings.Builder
	yaml.WriteString("ehr_systems:\n")
	for i, d := range []time.Duration{50 * time.Millisecond, 80 * time.Millisecond, 120 * time.Millisecond} {
		srv := fakeFHIR(b, d)
		fmt.Fprintf(&yaml, "  - name: ehr%d\n    adapter: fhir\n    base_url: %s/fhir\n    authentication: { type: api_key, api_key: \"env:BENCH_KEY\" }\n    timeout: 2000\n", i+1, srv.URL)
	}
	file := filepath.Join(b.TempDir(), "ehr.yaml")
	if err := os.WriteFile(file, []byte(yaml.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	e := setup(b, "SEARCH_RATE_LIMIT=0", "SEARCH_CACHE_TTL=10m", "EHR_CONFIG="+file, "BENCH_KEY=bench-key")
	base := *e
	base.env = e.envOnFreePort()
	for i, kv := range base.env {
		if strings.HasPrefix(kv, "DATABASE_URL=") {
			// A database of its own, migrated by the baseline itself.
			name := fmt.Sprintf("cb_baseline_%d", time.Now().UnixNano())
			if out, err := exec.Command("psql", "-h", "127.0.0.1", "-U", "postgres", "-c", "CREATE DATABASE "+name).CombinedOutput(); err != nil {
				b.Fatalf("create the baseline's database: %v %s", err, out)
			}
			base.env[i] = "DATABASE_URL=postgres://postgres@127.0.0.1:5432/" + name + "?sslmode=disable"
		}
	}
	base.bin = baseline
	base.server, base.base = e.serve(base.bin, base.env, "server-baseline.log")
	sides := []*world{e, &base}
	names := []string{"this build", "baseline"}
	body := `{"query":"family:Cached"}`
	for _, w := range sides {
		for range 2 {
			if status, _ := w.searchOnce(body); status != 200 {
				b.Fatalf("warm-up search: %d", status)
			}
		}
	}
	run := func(label string, headers [2][]string) float64 {
		rates := map[string][]float64{}
		for round := range 4 {
			for i := range 2 {
				k := (i + round) % 2 // alternate which goes first
				r, err := sides[k].wrkPost("/api/v1/search", body, 8, 5*time.Second, headers[k]...)
				if err != nil || r.errors > 0 {
					b.Fatalf("wrk: %v, %d errors", err, r.errors)
				}
				rates[names[k]] = append(rates[names[k]], r.rate())
				progress("%s, round %d, %s: %.0f req/s, p50 %s, p99 %s", label, round, names[k], r.rate(), r.pct(50), r.pct(99))
			}
		}
		median := func(v []float64) float64 {
			s := slices.Sorted(slices.Values(v))
			return (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		ratio := median(rates[names[0]]) / median(rates[names[1]])
		fmt.Printf("cached search %s, 8 connections, medians of 4 alternating rounds: this build %.0f req/s, baseline %.0f req/s, ratio %.3f (target >= 0.90)\n",
			label, median(rates[names[0]]), median(rates[names[1]]), ratio)
		return ratio
	}
	plain := run("naming no business", [2][]string{})
	var acting [2][]string
	for i, w := range sides {
		acting[i] = []string{"X-Business-Id", w.createBusiness("bench")}
		// A membership is seen within a second (each instance remembers
		// a caller's memberships that long).
		for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			status, _ := w.searchOnce(body, acting[i]...)
			if status == 200 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("warm-up search acting for a business: %d", status)
			}
		}
	}
	withLinks := run("acting for a practice (its links read)", acting)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(plain, "ratio")
	b.ReportMetric(withLinks, "acting-ratio")
}
