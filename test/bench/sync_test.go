package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The sync bench (issue 21, Measure).
const (
	syncInterval = 2 * time.Second // sync.interval of the fake EHR
	syncWindow   = 10000           // appointments in the next 14 days
	syncChanged  = 100             // changed between two polls
	syncSamples  = 30              // changes timed one by one
	syncIdle     = 4               // idle polls measured
	syncWait     = time.Minute     // longest wait for a poll's outcome
	// syncReconcilePages is core/ehr's bound on a reconciliation's listing
	// (reconcilePages pages of ehr.MaxLimit): a window with more
	// appointments is reconciled in part.
	syncReconcilePages = 100
)

// syncSeries are the /metrics series of the bench's EHR system.
const (
	syncPolls    = `carebridge_ehr_sync_poll_duration_seconds_count{ehr="bench"}`
	syncPollSum  = `carebridge_ehr_sync_poll_duration_seconds_sum{ehr="bench"}`
	syncBaseline = `carebridge_ehr_sync_changes_total{ehr="bench",kind="baseline"}`
)

// BenchmarkSync measures EHR sync on the real service (built from
// cmd/carebridge, its own process, PostgreSQL only) against a fake FHIR
// EHR in this process (syncEHR) holding syncWindow appointments in the
// next 14 days, polled every syncInterval, with a '*' subscription to a
// receiver here:
//
//   - the first sweep (the baseline, which publishes nothing) and the first
//     reconciliation of the 14-day window: requests and time;
//   - the poll cost: upstream requests and duration of an idle poll and of
//     the poll that takes in syncChanged changes made between two polls;
//   - the latency: syncSamples changes made one at a time at a random
//     moment of the interval, each timed from the change in the EHR to its
//     webhook's arrival (p50/p99), next to the expectation, interval/2 plus
//     a poll and a delivery.
func BenchmarkSync(b *testing.B) {
	fake := newSyncEHR(b, syncWindow)
	file := filepath.Join(b.TempDir(), "ehr.yaml")
	yaml := fmt.Sprintf("ehr_systems:\n  - name: bench\n    adapter: fhir\n    base_url: %s\n    timeout: 10000\n    sync: { interval: %s }\nintegration:\n  ehr: bench\n",
		fake.srv.URL, syncInterval)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	rcv := newReceiver()
	defer rcv.srv.Close()
	e := eventsSetup(b, "EHR_CONFIG="+file)
	e.admin("add-webhook", "--url", rcv.srv.URL+"/hook", "--events", "*")

	progress("sync: the baseline of %d appointments and the first reconciliation", syncWindow)
	first := e.syncFirst(fake)
	progress("sync: %d idle polls", syncIdle)
	idle := e.syncIdle(fake)
	progress("sync: %d changes between two polls", syncChanged)
	burst := e.syncBurst(fake, rcv)
	progress("sync: %d changes one at a time at a %v interval", syncSamples, syncInterval)
	lat := syncLatency(b, fake, rcv)

	printSync(os.Stdout, first, idle, burst, lat)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(ms(pct(lat, 50)), "p50_ms")
	b.ReportMetric(ms(pct(lat, 99)), "p99_ms")
	b.ReportMetric(float64(burst.requests), "requests/poll")
	b.ReportMetric(ms(burst.poll), "poll_ms")
	b.ReportMetric(float64(first.reconcile.requests), "reconcile_requests")
}

// syncCost is what some polls (or a reconciliation) cost upstream.
type syncCost struct {
	polls    int           // polls (PollOnce calls) the service measured
	requests int           // upstream requests
	entries  int           // appointments in their answers
	poll     time.Duration // mean poll duration, as the service measured it
	span     time.Duration // first request in to last answer out
	byKind   map[string]int
}

// syncStart is the first sweep and reconciliation.
type syncStart struct {
	baseline, reconcile syncCost
}

// syncFirst waits for the baseline (which may take several ticks) and
// the reconciliation that follows the first tick (done when a poll comes
// after its listing) and returns their cost: the baseline's polls and
// their summed duration, the reconciliation's requests and span.
func (e *world) syncFirst(fake *syncEHR) syncStart {
	var reqs []syncRequest
	reconciled := func() bool {
		w := slices.IndexFunc(reqs, func(r syncRequest) bool { return r.kind == "window" })
		return w >= 0 && slices.ContainsFunc(reqs[w:], func(r syncRequest) bool { return r.kind == "changes" })
	}
	deadline := time.Now().Add(syncWait)
	var first syncStart
	for first.baseline.polls == 0 || !reconciled() {
		reqs = append(reqs, fake.take()...)
		if first.baseline.polls == 0 && e.metric(syncBaseline) >= syncWindow {
			first.baseline.polls = int(e.metric(syncPolls))
			first.baseline.poll = secondsOf(e.metric(syncPollSum))
			first.baseline.span = time.Since(reqs[0].in)
			changes := slices.DeleteFunc(slices.Clone(reqs), func(r syncRequest) bool { return r.kind != "changes" })
			first.baseline.requests, first.baseline.entries = len(changes), costOf(changes).entries
		}
		if time.Now().After(deadline) {
			for _, r := range reqs[max(len(reqs)-8, 0):] {
				e.b.Logf("%s %s: %d entries, %v", r.kind, r.uri, r.entries, r.out.Sub(r.in))
			}
			e.b.Fatalf("no baseline and reconciliation within %v (baseline: %v; requests: %v):\n%s", syncWait, e.metric(syncBaseline), kinds(reqs), e.syncLog())
		}
		time.Sleep(20 * time.Millisecond)
	}
	w := slices.IndexFunc(reqs, func(r syncRequest) bool { return r.kind == "window" })
	var rec []syncRequest
	for _, r := range reqs[w:] {
		if r.kind == "window" || r.kind == "read" {
			rec = append(rec, r)
		}
	}
	first.reconcile = costOf(rec)
	return first
}

// syncIdle measures syncIdle polls with nothing changed.
func (e *world) syncIdle(fake *syncEHR) syncCost {
	n0, s0 := e.afterPoll(fake)
	time.Sleep(syncIdle*syncInterval + syncInterval/2)
	n1, s1 := e.metric(syncPolls), e.metric(syncPollSum)
	c := costOf(fake.take())
	c.polls = int(n1 - n0)
	c.poll = secondsOf((s1 - s0) / (n1 - n0))
	return c
}

// afterPoll waits until a poll has just ended, drops the requests so far
// and returns the poll count and sum.
func (e *world) afterPoll(fake *syncEHR) (float64, float64) {
	n := e.metric(syncPolls)
	deadline := time.Now().Add(syncWait)
	for e.metric(syncPolls) == n {
		if time.Now().After(deadline) {
			e.b.Fatalf("no poll within %v", syncWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	fake.take()
	return e.metric(syncPolls), e.metric(syncPollSum)
}

// syncBurstRun is the poll that takes in syncChanged changes.
type syncBurstRun struct {
	syncCost
	delivered []time.Duration // each change to its webhook
}

// syncBurst makes syncChanged changes right after a poll and measures the
// poll that takes them in (the requests of the next poll only).
func (e *world) syncBurst(fake *syncEHR, rcv *receiver) syncBurstRun {
	rcv.reset()
	n0, s0 := e.afterPoll(fake)
	changed := map[string]time.Time{}
	for i := range syncChanged {
		k := i * 97 % syncWindow
		at := time.Now()
		fake.change(k)
		changed[fmt.Sprintf("ap-%05d", k)] = at
	}
	if !rcv.waitFor(syncChanged, syncWait) {
		e.b.Fatalf("%d of %d events arrived:\n%s", rcv.n.Load(), syncChanged, e.syncLog())
	}
	n1, s1 := e.metric(syncPolls), e.metric(syncPollSum)
	reqs := fake.take()
	// The requests of the poll that read the changes: until the first gap
	// of half an interval.
	end := len(reqs)
	for i := 1; i < len(reqs); i++ {
		if reqs[i].in.Sub(reqs[i-1].out) > syncInterval/2 {
			end = i
			break
		}
	}
	run := syncBurstRun{syncCost: costOf(reqs[:end])}
	run.polls = int(n1 - n0)
	run.poll = secondsOf((s1 - s0) / max(n1-n0, 1))
	run.delivered = latencies(e.b, rcv.take(), changed)
	return run
}

// syncLatency makes syncSamples changes one at a time, each at a random
// moment of the interval after the last one's webhook, and returns each
// change's time to its webhook, sorted.
func syncLatency(b *testing.B, fake *syncEHR, rcv *receiver) []time.Duration {
	rcv.reset()
	var out []time.Duration
	for i := range syncSamples {
		time.Sleep(rand.N(syncInterval))
		k := (i*389 + 7) % syncWindow
		at := time.Now()
		fake.change(k)
		if !rcv.waitFor(1, syncWait) {
			b.Fatalf("change %d: no webhook within %v", i, syncWait)
		}
		out = append(out, latencies(b, rcv.take(), map[string]time.Time{fmt.Sprintf("ap-%05d", k): at})...)
	}
	slices.Sort(out)
	return out
}

// latencies matches arrivals to the changes (appointment id → the time of
// the change), one status_changed event each, and returns the delays,
// sorted.
func latencies(b *testing.B, got []arrival, changed map[string]time.Time) []time.Duration {
	var out []time.Duration
	for _, a := range got {
		var ev struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(a.body, &ev); err != nil {
			b.Fatal(err)
		}
		id, _ := ev.Data["appointmentId"].(string)
		at, ok := changed[id]
		if !ok || ev.Type != "appointment.status_changed" || ev.Data["origin"] != "ehr" {
			b.Fatalf("an event of no change made: %s", a.body)
		}
		delete(changed, id)
		out = append(out, a.at.Sub(at))
	}
	if len(changed) > 0 {
		b.Fatalf("%d changes without their event", len(changed))
	}
	slices.Sort(out)
	return out
}

// costOf sums requests.
func costOf(reqs []syncRequest) syncCost {
	c := syncCost{byKind: kinds(reqs)}
	for _, r := range reqs {
		c.requests++
		c.entries += r.entries
	}
	if len(reqs) > 0 {
		c.span = reqs[len(reqs)-1].out.Sub(reqs[0].in)
	}
	return c
}

// kinds counts reqs by kind.
func kinds(reqs []syncRequest) map[string]int {
	out := map[string]int{}
	for _, r := range reqs {
		out[r.kind]++
	}
	return out
}

// metric reads one series of the service's /metrics (0 when absent).
func (e *world) metric(series string) float64 {
	e.b.Helper()
	resp, err := e.api.Get(e.base + "/metrics")
	if err != nil {
		e.b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// syncLog is the service's log lines of sync and warnings, at most the
// last 40.
func (e *world) syncLog() string {
	raw, _ := os.ReadFile(filepath.Join(e.tmp, "server.log"))
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, `"component":"sync"`) || strings.Contains(l, `"level":"WARN"`) || strings.Contains(l, `"level":"ERROR"`) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(len(out)-40, 0):], "\n")
}

func secondsOf(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func printSync(w io.Writer, first syncStart, idle syncCost, burst syncBurstRun, lat []time.Duration) {
	expect := syncInterval/2 + idle.poll
	fmt.Fprintf(w, "\nEHR sync: a fake FHIR EHR with %d appointments in the next 14 days, sync.interval %v, one '*' subscription\n", syncWindow, syncInterval)
	fmt.Fprintf(w, "  baseline (first sweep):      %d appointments read in %d requests, %d polls taking %.0f ms in all; done %.1f s after its first request\n",
		first.baseline.entries, first.baseline.requests, first.baseline.polls, ms(first.baseline.poll), first.baseline.span.Seconds())
	fmt.Fprintf(w, "  reconciliation (14 days):    %d requests (%d listing pages, %d reads by id; %d appointments listed), %.0f ms upstream span; it lists at most %d pages of 100 an hour\n",
		first.reconcile.requests, first.reconcile.byKind["window"], first.reconcile.byKind["read"], first.reconcile.entries, ms(first.reconcile.span), syncReconcilePages)
	fmt.Fprintf(w, "  idle poll:                   %.1f requests/poll (%d requests over %d polls), %.1f ms/poll\n",
		float64(idle.requests)/float64(max(idle.polls, 1)), idle.requests, idle.polls, ms(idle.poll))
	fmt.Fprintf(w, "  poll with %d changed:       %d requests, %d appointments read, %.1f ms (service, %d poll(s)), %.1f ms upstream span\n",
		syncChanged, burst.requests, burst.entries, ms(burst.poll), burst.polls, ms(burst.span))
	fmt.Fprintf(w, "    their %d webhooks:        p50 %.0f ms, p99 %.0f ms from the change (made just after a poll: a whole interval)\n", len(burst.delivered), ms(pct(burst.delivered, 50)), ms(pct(burst.delivered, 99)))
	fmt.Fprintf(w, "  change → webhook (%d changes at random moments): p50 %.0f ms, p99 %.0f ms, max %.0f ms; expected ≈ interval/2 + poll = %.0f ms (plus the delivery)\n",
		len(lat), ms(pct(lat, 50)), ms(pct(lat, 99)), ms(lat[len(lat)-1]), ms(expect))
}
