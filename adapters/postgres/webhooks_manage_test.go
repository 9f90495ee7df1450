package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/test/pgtest"
)

// A run of failed attempts begins at the first failure and ends at a
// success; a failure when it has lasted a day disables the subscription:
// its pending deliveries fail, OnDisabled is told, Emit skips it and Claim
// no longer takes its deliveries.
func TestIntegrationWebhooks_SettleDisablesAfterADayOfFailures(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	var disabled []string
	hooks.OnDisabled = func(ids []string) { disabled = append(disabled, ids...) }
	sub := subscribe(t, db, "", "*")
	failing := func() *time.Time {
		var at *time.Time
		if err := db.Pool().QueryRow(ctx, `SELECT failing_since FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	attempt := func(ok bool) {
		t.Helper()
		emitEvent(t, db, core.BusinessEvent(core.NewUUID()))
		ds, err := hooks.Claim(ctx, nil, 16, time.Minute)
		if err != nil || len(ds) == 0 {
			t.Fatalf("claim: %d, %v", len(ds), err)
		}
		var outs []event.Outcome
		for _, d := range ds {
			o := event.Outcome{ID: d.ID, Attempt: d.Attempt, State: event.Pending, NextAt: time.Now().Add(time.Hour),
				Result: event.Result{Status: 500, Err: "status 500"}}
			if ok {
				o.State, o.Result = event.Delivered, event.Result{Status: 204}
			}
			outs = append(outs, o)
		}
		if err := hooks.Settle(ctx, outs); err != nil {
			t.Fatal(err)
		}
	}

	attempt(false)
	if failing() == nil {
		t.Fatal("a failure began no run")
	}
	attempt(true)
	if failing() != nil {
		t.Fatal("a success did not end the run")
	}
	attempt(false)
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_subscriptions SET failing_since = now() - interval '25 hours' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	emitEvent(t, db, core.BusinessEvent(core.NewUUID())) // pending when disabled
	attempt(false)
	if len(disabled) != 1 || disabled[0] != sub.ID {
		t.Fatalf("disabled %v", disabled)
	}
	var enabled bool
	var reason string
	var pending int
	if err := db.Pool().QueryRow(ctx, `SELECT enabled, disabled_reason,
		(SELECT count(*) FROM webhook_deliveries WHERE subscription_id = $1 AND state = 'pending')
		FROM webhook_subscriptions WHERE id = $1`, sub.ID).Scan(&enabled, &reason, &pending); err != nil {
		t.Fatal(err)
	}
	if enabled || reason != event.DisabledFailing || pending != 0 {
		t.Fatalf("enabled %v, reason %q, %d pending", enabled, reason, pending)
	}
	e := emitEvent(t, db, core.BusinessEvent(core.NewUUID()))
	if got := receivers(t, db, e.ID); len(got) != 0 {
		t.Fatalf("a disabled subscription got a delivery: %v", got)
	}
}

// The practice's store works within one business: another business's
// subscription is not found; a replay queues the business's selected
// events of the range again, and a test event reaches one subscription.
func TestIntegrationWebhooks_ManagedWithinOneBusiness(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	a, b := core.NewUUID(), core.NewUUID()
	for _, id := range []string{a, b} {
		if _, err := db.Pool().Exec(ctx, `INSERT INTO businesses (id, owner_subject, name, email) VALUES ($1, 'o', 'C', 'c@example.com')`, id); err != nil {
			t.Fatal(err)
		}
	}
	sub := event.Subscription{ID: core.NewUUID(), URL: "https://hooks.example/", Types: []string{"business.updated"},
		BusinessID: a, Origin: event.ByAPI, Enabled: true, Secret: []byte("sealed")}
	if err := hooks.Create(ctx, &sub); err != nil {
		t.Fatal(err)
	}
	other := subscribe(t, db, a, "*")
	if _, err := hooks.Get(ctx, b, sub.ID); !errors.Is(err, event.ErrSubscriptionNotFound) {
		t.Fatalf("another business's Get: %v", err)
	}
	if err := hooks.Delete(ctx, b, sub.ID); !errors.Is(err, event.ErrSubscriptionNotFound) {
		t.Fatalf("another business's Delete: %v", err)
	}
	if _, _, err := hooks.Deliveries(ctx, b, sub.ID, "", event.PageRequest{Page: 1, Limit: 10}); !errors.Is(err, event.ErrSubscriptionNotFound) {
		t.Fatalf("another business's Deliveries: %v", err)
	}

	start := time.Now().Add(-time.Minute)
	emitEvent(t, db, core.BusinessEvent(a))
	emitEvent(t, db, core.LocationEvent(core.LocationCreated, 1, a)) // not selected
	emitEvent(t, db, core.BusinessEvent(b))                          // not a's
	emitEvent(t, db, core.BusinessEvent(a))
	if n, err := hooks.Replay(ctx, b, sub.ID, start, time.Now().Add(time.Minute)); !errors.Is(err, event.ErrSubscriptionNotFound) || n != 0 {
		t.Fatalf("another business's Replay: %d, %v", n, err)
	}
	n, err := hooks.Replay(ctx, a, sub.ID, start, time.Now().Add(time.Minute))
	if err != nil || n != 2 {
		t.Fatalf("replay: %d, %v", n, err)
	}
	test := core.NewEvent(core.WebhookTest, a, core.WebhookTestData{WebhookID: sub.ID})
	if err := hooks.Test(ctx, a, sub.ID, test); err != nil {
		t.Fatal(err)
	}
	if got := receivers(t, db, test.ID); len(got) != 1 || got[0] != sub.ID {
		t.Fatalf("the test event reached %v (other: %s)", got, other.ID)
	}
	recs, total, err := hooks.Deliveries(ctx, a, sub.ID, event.Pending, event.PageRequest{Page: 1, Limit: 10})
	if err != nil || total != 3 || len(recs) != 3 || recs[0].Type != core.WebhookTest {
		t.Fatalf("log: %d of %d, %v; newest %+v", len(recs), total, err, recs)
	}
}

// A retry asked for while an attempt is in flight is not lost when that
// attempt settles: the delivery stays pending and due.
func TestIntegrationWebhooks_RetryDuringAnAttemptIsKept(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	biz := core.NewUUID()
	if _, err := db.Pool().Exec(ctx, `INSERT INTO businesses (id, owner_subject, name, email) VALUES ($1, 'o', 'C', 'c@example.com')`, biz); err != nil {
		t.Fatal(err)
	}
	sub := subscribe(t, db, biz, "*")
	emitEvent(t, db, core.BusinessEvent(biz))
	ds, err := hooks.Claim(ctx, nil, 16, time.Minute)
	if err != nil || len(ds) != 1 {
		t.Fatalf("claim: %d, %v", len(ds), err)
	}
	if err := hooks.Retry(ctx, biz, sub.ID, ds[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := hooks.Settle(ctx, []event.Outcome{{ID: ds[0].ID, Attempt: ds[0].Attempt, State: event.Delivered,
		Result: event.Result{Status: 204}}}); err != nil {
		t.Fatal(err)
	}
	again, err := hooks.Claim(ctx, nil, 16, time.Minute)
	if err != nil || len(again) != 1 || again[0].EventID != ds[0].EventID || again[0].Attempt != 2 {
		t.Fatalf("after the retry and the earlier attempt's settle: %+v, %v", again, err)
	}
	if err := hooks.Settle(ctx, []event.Outcome{{ID: again[0].ID, Attempt: again[0].Attempt, State: event.Delivered,
		Result: event.Result{Status: 204}}}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := hooks.Deliveries(ctx, biz, sub.ID, event.Delivered, event.PageRequest{Page: 1, Limit: 10})
	if err != nil || len(recs) != 1 || recs[0].Attempts != 2 {
		t.Fatalf("log after the retried attempt: %+v, %v", recs, err)
	}
}
