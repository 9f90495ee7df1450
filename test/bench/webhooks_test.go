package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The webhooks a practice manages: one practice with many subscriptions.
const (
	practiceSubs     = 50               // subscriptions ('*') of the one practice, made by API
	practiceDuration = 5 * time.Second  // each paced run
	practiceWait     = 60 * time.Second // longest wait for the last delivery
)

var practiceRates = []int{20, 50, 100, 150, 200} // events/s of the paced runs (×50 deliveries)

// BenchmarkWebhooksPractice measures delivery to the subscriptions of one
// practice: the real service (WEBHOOK_ALLOW_PRIVATE=true, the receiver on
// loopback), practiceSubs subscriptions made through POST
// /api/v1/webhooks, events committed into the outbox with SQL at a fixed
// rate (as emit writes them) for practiceDuration, and for each run: the
// events delivered to every subscription per second, and the p50/p99 from
// an event's commit (its occurredAt, an upper bound) to each receipt and
// to its last receipt.
func BenchmarkWebhooksPractice(b *testing.B) {
	e := eventsSetup(b, "WEBHOOK_ALLOW_PRIVATE=true")
	rcv := newReceiver()
	defer rcv.srv.Close()
	biz := e.admin("create-business", "--name", "Bench practice", "--email", "p@clinic.example", "--owner", "bench")["id"].(string)
	for i := range practiceSubs {
		body, _ := json.Marshal(map[string]any{"url": fmt.Sprintf("%s/hook/%d", rcv.srv.URL, i), "events": []string{"*"}})
		req, _ := http.NewRequest(http.MethodPost, e.base+"/api/v1/webhooks", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.token)
		req.Header.Set("X-Business-Id", biz)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.api.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			b.Fatalf("create webhook %d: %d %s", i, resp.StatusCode, msg)
		}
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, e.dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()

	warm := practicePaced(ctx, b, pool, biz, 10, time.Second)
	rcv.waitFor(practiceSubs*warm.committed, practiceWait)
	rcv.reset()

	var runs []practiceRun
	for _, rate := range practiceRates {
		progress("webhooks: one practice, %d subscriptions, %d events/s for %v", practiceSubs, rate, practiceDuration)
		r := practiceRun{eventRun: practicePaced(ctx, b, pool, biz, rate, practiceDuration)}
		r.complete = rcv.waitFor(practiceSubs*r.committed, practiceWait)
		r.analyse(rcv.take())
		if !r.complete {
			progress("webhooks: %d events/s: %d of %d deliveries arrived; outbox: %s", rate, r.deliveries, practiceSubs*r.committed, outboxState(ctx, pool))
			abandon(ctx, pool, rcv)
		}
		runs = append(runs, r)
	}

	fmt.Fprintf(os.Stdout, "\n== webhooks of one practice: %d subscriptions ('*', made by API), events committed with SQL\n", practiceSubs)
	fmt.Fprintf(os.Stdout, "%-10s %-10s %-12s %-14s %-10s %-10s %-10s %-10s\n", "events/s", "complete", "deliveries", "full events/s", "p50", "p99", "last p50", "last p99")
	for _, r := range runs {
		fmt.Fprintf(os.Stdout, "%-10d %-10v %-12d %-14.0f %-10s %-10s %-10s %-10s\n", r.rate, r.complete, r.deliveries, r.fullRate(),
			pct(r.fromOccurred, 50).Round(time.Millisecond), pct(r.fromOccurred, 99).Round(time.Millisecond),
			pct(r.fullLat, 50).Round(time.Millisecond), pct(r.fullLat, 99).Round(time.Millisecond))
	}
	// Kept up: the fastest run whose every event reached every
	// subscription at 95 % of its rate or more; the ceiling: the most
	// events/s any run delivered to all.
	kept, ceiling := runs[0], 0.0
	for _, r := range runs {
		if r.complete && r.fullRate() >= 0.95*float64(r.rate) && r.rate > kept.rate {
			kept = r
		}
		ceiling = max(ceiling, r.fullRate())
	}
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(kept.fullRate(), "events/s")
	b.ReportMetric(ms(pct(kept.fromOccurred, 99)), "p99_ms")
	b.ReportMetric(ceiling, "ceiling-events/s")
}

// practicePaced is sqlPaced at any rate: a transaction of ⌈rate/100⌉
// events every ⌈rate/100⌉/rate s (10 ms or more).
func practicePaced(ctx context.Context, b *testing.B, pool *pgxpool.Pool, biz string, rate int, d time.Duration) eventRun {
	per := (rate + 99) / 100 // events per transaction: a tick of 10 ms or more
	tick := time.Duration(float64(per) / float64(rate) * float64(time.Second))
	ticks := int(d / tick)
	r := eventRun{rate: rate, sent: per * ticks, start: time.Now()}
	for i := range ticks {
		if w := time.Until(r.start.Add(time.Duration(i) * tick)); w > 0 {
			time.Sleep(w)
		}
		if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return insertEvents(ctx, tx, biz, per) }); err != nil {
			b.Fatalf("paced SQL: write events: %v", err)
		}
		r.committed += per
	}
	r.sendTime = time.Since(r.start)
	return r
}

// practiceRun is a paced run to practiceSubs subscriptions.
type practiceRun struct{ eventRun }

// analyse reads the arrivals: each one's latency from its event's
// occurredAt, and the events that reached every subscription.
func (r *practiceRun) analyse(got []arrival) {
	type ev struct {
		occurred, last time.Time
		n              int
	}
	evs := map[string]*ev{}
	for _, a := range got {
		var body struct {
			OccurredAt time.Time `json:"occurredAt"`
		}
		if json.Unmarshal(a.body, &body) != nil {
			continue
		}
		r.deliveries++
		r.fromOccurred = append(r.fromOccurred, a.at.Sub(body.OccurredAt))
		v := evs[a.id]
		if v == nil {
			v = &ev{occurred: body.OccurredAt}
			evs[a.id] = v
		}
		v.n++
		if a.at.After(v.last) {
			v.last = a.at
		}
	}
	for _, v := range evs {
		if v.n == practiceSubs {
			r.full++
			r.lastFull = max(r.lastFull, v.last.Sub(r.start))
			r.fullLat = append(r.fullLat, v.last.Sub(v.occurred))
		}
	}
	slices.Sort(r.fromOccurred)
	slices.Sort(r.fullLat)
}
