package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
)

// benchSubject is the subject of the bench's token and the owner of the
// business it seeds.
const benchSubject = "bench"

// Targets of the business issue.
const (
	readClients  = 32
	readDuration = 10 * time.Second
	readRounds   = 3
	readRatio    = 0.85                  // service requests/s vs the ceiling (below)
	readP99      = 20 * time.Millisecond // service p99
)

// BenchmarkBusinessReads is the load run of the read endpoints: 32 clients
// for 10 s round-robin over GET /business/:id, GET /business/locations/:id
// and GET …/operating-hours, next to the same repository queries issued
// straight through pgx from 32 goroutines in the same run (the database
// floor) and /healthz (the HTTP floor).
//
// The ceiling is what both floors cost together. A request of the service
// pays the HTTP edge (the service's share of /healthz, and wrk's) and the
// queries (the pgx client's share, and PostgreSQL's) on the same two
// cores, so at best its CPU is the sum of the two, and its rate
// 1/(1/floor + 1/direct). Neither floor alone is a ceiling: the direct
// queries do no HTTP, /healthz no queries. The same bound is printed from
// CPU per request as well ((healthz µs + pgx client µs) / service µs, the
// Go and wrk processes), which holds when other work takes a share of the
// cores during one run and not the next: rates drift with that, CPU per
// request much less.
func BenchmarkBusinessReads(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	biz, loc := e.seedBusiness()

	paths := []string{"/business/" + biz, "/business/locations/" + biz, fmt.Sprintf("/business/location/%d/operating-hours", loc)}
	if e.pprofDir != "" {
		e.hook("/cpu/start", "cpu-business-reads.pprof")
	}
	// wrk (C, epoll) leaves the cores to the service; Go's client is the
	// fallback where wrk is missing, and costs the service a third of its
	// rate on two shared cores.
	db, err := postgres.New(ctx, e.dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	businesses, locations, hours := db.Businesses(), db.Locations(), db.Hours()
	directOp := func(i int) error {
		// The queries each endpoint makes, one statement each: the
		// business with the caller's role in it; the locations of a
		// business the caller is a member of; the hours of a location
		// whose business the caller is a member of.
		var (
			member = true
			err    error
		)
		switch i % 3 {
		case 0:
			var role core.Role
			_, role, err = businesses.GetWithRole(ctx, biz, benchSubject)
			member = role != ""
		case 1:
			_, member, err = locations.ListByBusinessForMember(ctx, biz, benchSubject)
		default:
			_, member, err = hours.ListForMember(ctx, loc, benchSubject)
		}
		if err == nil && !member {
			err = errors.New("the bench's subject is not a member")
		}
		return err
	}

	// The two runs alternate, readRounds times, and each figure is the
	// round with the median rate: a shared machine drifts by ±10 % from
	// one 10 s run to the next.
	generator := "wrk"
	var services, directs []loadResult
	for round := range readRounds {
		service, err := e.wrk(paths)
		if err != nil {
			progress("wrk unavailable (%v): load from Go's HTTP client", err)
			generator = "Go net/http client"
			service = e.goLoad(paths)
		}
		if round == 0 && e.pprofDir != "" {
			e.hook("/cpu/stop", "")
			e.hook("/profile/allocs", "allocs-business-reads.pprof")
		}
		direct := load(directOp)
		progress("round %d/%d: service %.0f req/s, direct %.0f req/s", round+1, readRounds, service.rate(), direct.rate())
		services, directs = append(services, service), append(directs, direct)
	}
	service, direct := medianRate(services), medianRate(directs)
	// The HTTP floor: the same load on /healthz, which does no work. With
	// the load generator on the same two cores, no endpoint that makes the
	// direct queries can beat 1/(1/floor + 1/direct) requests/s.
	var floor loadResult
	if generator == "wrk" {
		floor, _ = e.wrk([]string{"/healthz"})
	}
	// Without wrk there is no floor: the direct rate is the ceiling.
	ceiling := direct.rate()
	if floor.requests() > 0 {
		ceiling = 1 / (1/floor.rate() + 1/direct.rate())
	}
	ratio := service.rate() / ceiling
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		return "FAIL"
	}
	fmt.Printf("\nBusiness read endpoints: %d clients, round-robin over GET business, locations, operating hours (load: %s);\n", readClients, generator)
	fmt.Printf("service and direct runs of %v alternate %d times, the median round of each is shown\n", readDuration, readRounds)
	fmt.Printf("%-34s %10s %9s %9s %9s %7s\n", "path", "requests", "req/s", "p50", "p99", "errors")
	for _, r := range []struct {
		name string
		s    loadResult
	}{{"service over HTTP", service}, {"same queries, direct pgx", direct}, {"GET /healthz (HTTP floor)", floor}} {
		if r.s.requests() == 0 {
			continue
		}
		fmt.Printf("%-34s %10d %9.0f %9s %9s %7d\n", r.name, r.s.requests(), r.s.rate(), r.s.pct(50), r.s.pct(99), r.s.errors)
	}
	fmt.Printf("ceiling on these cores: 1/(1/floor + 1/direct) = %.0f req/s (%.2f of direct)\n", ceiling, ceiling/direct.rate())
	fmt.Printf("service / ceiling: %.2f (target >= %.2f) %s;  service / direct %.2f;  service p99 %s (target < %s) %s\n",
		ratio, readRatio, verdict(ratio >= readRatio), service.rate()/direct.rate(), service.pct(99), readP99, verdict(service.pct(99) < readP99))
	if c, d := service.cpu, direct.cpu; c.server > 0 && d.client > 0 {
		n, m := service.requests(), direct.requests()
		fmt.Printf("CPU per request: service run %.0fµs = service %.0f + postgres %.0f + wrk %.0f (service: %.1f reads, %.1f writes);\n",
			perRequest(c.server+c.postgres+c.generator, n), perRequest(c.server, n), perRequest(c.postgres, n), perRequest(c.generator, n),
			c.reads/float64(max(n, 1)), c.writes/float64(max(n, 1)))
		fmt.Printf("                 direct run %.0fµs = pgx client %.0f + postgres %.0f\n",
			perRequest(d.client+d.postgres, m), perRequest(d.client, m), perRequest(d.postgres, m))
		if f, k := floor.cpu, floor.requests(); k > 0 {
			fmt.Printf("                 /healthz run %.0fµs = service %.0f + wrk %.0f\n",
				perRequest(f.server+f.generator, k), perRequest(f.server, k), perRequest(f.generator, k))
			// PostgreSQL is left out on both sides: its figure for the
			// service run has read far below the direct run's for the same
			// statements (its backends' CPU is not all seen there), so the
			// bound compares the Go and wrk processes alone.
			least := perRequest(f.server+f.generator, k) + perRequest(d.client, m)
			fmt.Printf("CPU bound without PostgreSQL: (/healthz %.0fµs + pgx client %.0fµs) / (service + wrk %.0fµs) = %.2f\n",
				perRequest(f.server+f.generator, k), perRequest(d.client, m), perRequest(c.server+c.generator, n),
				least/perRequest(c.server+c.generator, n))
		}
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(service.rate(), "service-req/s")
	b.ReportMetric(direct.rate(), "direct-req/s")
	b.ReportMetric(ratio, "service/ceiling")
	b.ReportMetric(float64(service.pct(99).Microseconds())/1000, "service-p99-ms")
	if service.errors > 0 || direct.errors > 0 {
		b.Errorf("errors: service %d (%v), direct %d (%v)", service.errors, service.firstErr, direct.errors, direct.firstErr)
	}
	if os.Getenv("BENCH_STRICT") == "1" && (ratio < readRatio || service.pct(99) >= readP99) {
		b.Error("a target was missed (BENCH_STRICT=1)")
	}
}

// seedBusiness creates a business owned by the bench's subject, with one
// location, two providers and five days of hours.
func (e *world) seedBusiness() (string, int64) {
	e.b.Helper()
	admin := func(args ...string) map[string]any {
		cmd := exec.Command(e.bin, append([]string{"admin"}, args...)...)
		cmd.Env = e.env
		out, err := cmd.Output()
		if err != nil {
			e.b.Fatalf("admin %v: %v\n%s", args, err, stderrOf(err))
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			e.b.Fatal(err)
		}
		return m
	}
	biz := admin("create-business", "--name", "Bench Clinic", "--email", "bench@clinic.example", "--owner", benchSubject)["id"].(string)
	var created struct {
		Data struct{ LocationID int64 }
	}
	e.apiJSON("POST", "/business/location/"+biz+"/", "multipart/form-data; boundary=B",
		"--B\r\nContent-Disposition: form-data; name=\"generalInfo\"\r\n\r\n"+
			`{"name":"Main","timezone":"America/Chicago","phone":"+1 512 555 0100","email":"m@clinic.example"}`+
			"\r\n--B\r\nContent-Disposition: form-data; name=\"address\"\r\n\r\n"+
			`{"address":"1 Main St","city":"Austin","state":"TX","zipCode":"78701","country":"US"}`+"\r\n--B--\r\n", &created)
	loc := created.Data.LocationID
	for _, p := range []string{"Ana", "Ben"} {
		admin("create-provider", "--first", p, "--last", "Doe", "--email", strings.ToLower(p)+"@clinic.example", "--location", fmt.Sprint(loc))
	}
	var hs []string
	for _, d := range []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday"} {
		hs = append(hs, fmt.Sprintf(`{"day":%q,"start_time":"08:00","end_time":"17:00"}`, d))
	}
	e.apiJSON("POST", "/business/operating-hours/add", "application/json",
		fmt.Sprintf(`{"businessLocationId":%d,"operatingHours":[%s]}`, loc, strings.Join(hs, ",")), nil)
	return biz, loc
}

// apiJSON calls the API as the bench's token, with the header pairs
// given (name, value, …), fails the bench on anything but a 2xx, and
// decodes the answer into out (nil: none).
func (e *world) apiJSON(method, path, ct, body string, out any, header ...string) {
	e.b.Helper()
	req, _ := http.NewRequest(method, e.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token)
	req.Header.Set("user-type", "business")
	req.Header.Set("Content-Type", ct)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.api.Do(req)
	if err != nil {
		e.b.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		e.b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.b.Fatal(err)
		}
	}
}

// medianRate returns the result with the median rate.
func medianRate(rs []loadResult) loadResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b loadResult) int {
		switch {
		case a.rate() < b.rate():
			return -1
		case a.rate() > b.rate():
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

type loadResult struct {
	latencies []time.Duration // sorted; empty when the figures come from wrk
	elapsed   time.Duration
	errors    int
	firstErr  error
	wrk       struct {
		requests int
		p50, p99 time.Duration
	}
	cpu loadCPU // during the timed window; zeros where /proc is missing
}

// loadCPU is where the cores went during a timed window: the bench
// process (the direct pgx client), the service and its system calls, as
// for the blob runs, plus every PostgreSQL process and the load generator
// (wrk).
type loadCPU struct {
	cpuTimes
	postgres, generator float64
}

// perRequest is s seconds spread over n requests, in microseconds.
func perRequest(s float64, n int) float64 { return s / float64(max(n, 1)) * 1e6 }

// postgresCPU returns the CPU seconds of every process named postgres
// (the server and its backends) so far.
func postgresCPU() float64 {
	var sum float64
	for _, pid := range pidsWhere("comm", func(comm []byte) bool { return string(bytes.TrimSpace(comm)) == "postgres" }) {
		sum += procCPU(pid)
	}
	return sum
}

func (r loadResult) requests() int {
	if r.latencies == nil {
		return r.wrk.requests
	}
	return len(r.latencies)
}

func (r loadResult) rate() float64 { return float64(r.requests()) / r.elapsed.Seconds() }

func (r loadResult) pct(p int) time.Duration {
	switch {
	case r.latencies == nil && p == 50:
		return r.wrk.p50
	case r.latencies == nil && p == 99:
		return r.wrk.p99
	case len(r.latencies) == 0:
		return 0
	}
	return r.latencies[(len(r.latencies)-1)*p/100].Round(10 * time.Microsecond)
}

// wrkScript sends the requests round-robin over the paths with the
// headers, and prints one line of figures: requests, duration (µs), p50
// and p99 latency (µs), and failed requests (errors and non-2xx).
const wrkScript = `
paths = {%s}
wrk.headers["Authorization"] = "Bearer %s"
wrk.headers["user-type"] = "business"
-- The requests are formatted once per thread: the generator shares the
-- cores with the service, so each of its microseconds is taken from it.
local reqs = {}
local i = 0
init = function(args)
  for k, p in ipairs(paths) do reqs[k] = wrk.format("GET", p) end
end
request = function()
  i = i + 1
  return reqs[(i %% #reqs) + 1]
end
done = function(s, latency, requests)
  local e = s.errors
  io.write(string.format("CBFIGURES %%d %%d %%d %%d %%d\n", s.requests, s.duration,
    latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout + e.status))
end
`

// wrk runs the load with wrk: a warm-up second, then readDuration.
func (e *world) wrk(paths []string) (loadResult, error) {
	var r loadResult
	bin, err := exec.LookPath("wrk")
	if err != nil {
		return r, err
	}
	quoted := make([]string, len(paths))
	for i, p := range paths {
		quoted[i] = fmt.Sprintf("%q", p)
	}
	script := filepath.Join(e.tmp, "reads.lua")
	if err := os.WriteFile(script, []byte(fmt.Sprintf(wrkScript, strings.Join(quoted, ", "), e.token)), 0o600); err != nil {
		return r, err
	}
	run := func(d time.Duration) (*exec.Cmd, []byte, error) {
		cmd := exec.Command(bin, "-t", "2", "-c", fmt.Sprint(readClients), "-d", fmt.Sprintf("%ds", int(d.Seconds())), "-s", script, e.base)
		out, err := cmd.Output()
		return cmd, out, err
	}
	if _, _, err := run(time.Second); err != nil {
		return r, err
	}
	before, pg := e.cpu(), postgresCPU()
	cmd, out, err := run(readDuration)
	if err != nil {
		return r, err
	}
	if r, err = parseWrk(out); err != nil {
		return r, err
	}
	r.cpu = loadCPU{
		cpuTimes:  e.cpu().sub(before),
		postgres:  postgresCPU() - pg,
		generator: (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(),
	}
	return r, nil
}

// parseWrk reads the CBFIGURES line the scripts print.
func parseWrk(out []byte) (loadResult, error) {
	var r loadResult
	_, line, ok := strings.Cut(string(out), "CBFIGURES ")
	var durUS, p50, p99 int64
	if !ok {
		return r, fmt.Errorf("no figures in wrk output %q", out)
	}
	if _, err := fmt.Sscan(line, &r.wrk.requests, &durUS, &p50, &p99, &r.errors); err != nil {
		return r, fmt.Errorf("wrk figures %q: %w", line, err)
	}
	r.elapsed = time.Duration(durUS) * time.Microsecond
	r.wrk.p50, r.wrk.p99 = time.Duration(p50)*time.Microsecond, time.Duration(p99)*time.Microsecond
	if r.errors > 0 {
		r.firstErr = errors.New("wrk counted failed or non-2xx requests")
	}
	return r, nil
}

// goLoad runs the load from Go's HTTP client.
func (e *world) goLoad(paths []string) loadResult {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = readClients
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return load(func(i int) error {
		req, _ := http.NewRequest("GET", e.base+paths[i%len(paths)], nil)
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("user-type", "business")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("GET %s: %d", paths[i%len(paths)], resp.StatusCode)
		}
		return err
	})
}

// load runs op from readClients goroutines for readDuration (after a short
// warm-up) and records every call's latency.
func load(op func(i int) error) loadResult {
	warm := time.Now().Add(time.Second)
	for i := 0; time.Now().Before(warm); i++ {
		op(i)
	}
	var (
		mu     sync.Mutex
		all    []time.Duration
		errs   int
		first  error
		wg     sync.WaitGroup
		start  = time.Now()
		cutoff = start.Add(readDuration)
		self   = procCPU(os.Getpid())
		pg     = postgresCPU()
	)
	for c := range readClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			n := 0
			for i := c; time.Now().Before(cutoff); i++ {
				t0 := time.Now()
				err := op(i)
				if err != nil {
					n++
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				lat = append(lat, time.Since(t0))
			}
			mu.Lock()
			all = append(all, lat...)
			errs += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := loadCPU{cpuTimes: cpuTimes{client: procCPU(os.Getpid()) - self}, postgres: postgresCPU() - pg}
	slices.Sort(all)
	return loadResult{latencies: all, elapsed: elapsed, errors: errs, firstErr: first, cpu: cpu}
}
