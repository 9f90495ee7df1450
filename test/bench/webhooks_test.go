package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

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
	biz := e.createBusiness("bench")
	for i := range practiceSubs {
		body, _ := json.Marshal(map[string]any{"url": fmt.Sprintf("%s/hook/%d", rcv.srv.URL, i), "events": []string{"*"}})
		e.apiJSON(http.MethodPost, "/api/v1/webhooks", "application/json", string(body), nil, "X-Business-Id", biz)
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, e.dbURL)
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()

	warm := sqlPaced(ctx, b, pool, biz, 10, time.Second)
	rcv.waitFor(practiceSubs*warm.committed, practiceWait)
	rcv.reset()

	var runs []eventRun
	for _, rate := range practiceRates {
		progress("webhooks: one practice, %d subscriptions, %d events/s for %v", practiceSubs, rate, practiceDuration)
		r := sqlPaced(ctx, b, pool, biz, rate, practiceDuration)
		r.complete = rcv.waitFor(practiceSubs*r.committed, practiceWait)
		r.tally(rcv.take(), practiceSubs, nil)
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
