package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/test/pgtest"
)

// subscribe adds a subscription to types, of business (or every business
// when ""), and returns it.
func subscribe(t *testing.T, db *postgres.Store, business string, types ...string) event.Subscription {
	t.Helper()
	s := event.Subscription{ID: core.NewUUID(), URL: "https://hooks.example/" + types[0], Types: types,
		BusinessID: business, Secret: []byte("sealed-" + types[0])}
	if err := db.Webhooks().Add(context.Background(), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// emitEvent writes e through the outbox and returns it.
func emitEvent(t *testing.T, db *postgres.Store, e core.Event) core.Event {
	t.Helper()
	if err := db.Outbox().Emit(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

// receivers returns the subscriptions that have a delivery of event id,
// sorted, checking that each is pending and unattempted.
func receivers(t *testing.T, db *postgres.Store, id string) []string {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `
		SELECT d.subscription_id::text, d.state, d.attempts FROM webhook_deliveries d
		JOIN events e ON e.seq = d.event_seq WHERE e.id = $1 ORDER BY 1`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var subs []string
	for rows.Next() {
		var sub, state string
		var attempts int
		if err := rows.Scan(&sub, &state, &attempts); err != nil {
			t.Fatal(err)
		}
		if state != "pending" || attempts != 0 {
			t.Errorf("new delivery of %s to %s: %s after %d attempts", id, sub, state, attempts)
		}
		subs = append(subs, sub)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return subs
}

func ids(subs ...event.Subscription) []string {
	out := make([]string, len(subs))
	for i, s := range subs {
		out[i] = s.ID
	}
	sort.Strings(out)
	return out
}

func TestIntegrationWebhooks_AnEventReachesTheSubscriptionsThatWantIt(t *testing.T) {
	db := pgtest.Store(t)
	bizA := seedBusiness(t, db, "owner-a")
	bizB := core.NewUUID()

	all := subscribe(t, db, "", "*")
	created := subscribe(t, db, "", "location.created")
	ofA := subscribe(t, db, bizA.ID, "*")
	locationsOfA := subscribe(t, db, bizA.ID, "location.created", "location.updated")
	ofB := subscribe(t, db, bizB, "*")

	// A change's event fans out in its transaction.
	loc := business.Location{BusinessID: bizA.ID, Name: "Main"}
	if err := createLocation(db, &loc); err != nil {
		t.Fatal(err)
	}
	var seq int64
	evs := eventsAfter(t, db, &seq)
	if len(evs) != 1 {
		t.Fatalf("%d events of a location create", len(evs))
	}
	for _, tt := range []struct {
		name string
		id   string
		want []string
	}{
		{"location.created of A", evs[0].ID, ids(all, created, ofA, locationsOfA)},
		{"location.updated of B", emitEvent(t, db, core.LocationEvent(core.LocationUpdated, 7, bizB)).ID, ids(all, ofB)},
		{"business.updated of A", emitEvent(t, db, core.BusinessEvent(bizA.ID)).ID, ids(all, ofA)},
		{"operating_hours.changed of A", emitEvent(t, db, core.LocationEvent(core.OperatingHoursChanged, loc.ID, bizA.ID)).ID, ids(all, ofA)},
		{"location.created of no business", emitEvent(t, db, core.LocationEvent(core.LocationCreated, 9, "")).ID, ids(all, created)},
		{"appointment.booked", emitEvent(t, db, core.AppointmentEvent(core.AppointmentBooked, core.OriginAPI, "a-1", "dr-1", "booked", time.Now(), time.Now(), "")).ID, ids(all)},
	} {
		if got := receivers(t, db, tt.id); !slices.Equal(got, tt.want) {
			t.Errorf("%s reached %v, want %v", tt.name, got, tt.want)
		}
	}

	// A subscription receives the events written after it exists.
	before := eventsAfter(t, db, new(int64))
	late := subscribe(t, db, "", "*")
	for _, e := range before {
		if got := receivers(t, db, e.ID); slices.Contains(got, late.ID) {
			t.Errorf("a subscription added later got %s", e.Type)
		}
	}
	after := emitEvent(t, db, core.BusinessEvent(bizA.ID))
	if got, want := receivers(t, db, after.ID), ids(all, ofA, late); !slices.Equal(got, want) {
		t.Errorf("an event after the late subscription reached %v, want %v", got, want)
	}
}

func TestIntegrationWebhooks_ClaimLeasesDueDeliveriesPerSubscription(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	one, two := subscribe(t, db, "", "*"), subscribe(t, db, "", "business.updated")
	var evs []core.Event
	for range 3 {
		evs = append(evs, emitEvent(t, db, core.BusinessEvent(core.NewUUID())))
	}
	subOf := func(ds []event.Delivery) map[string][]string {
		m := map[string][]string{}
		for _, d := range ds {
			m[d.Subscription] = append(m[d.Subscription], d.EventID)
		}
		return m
	}

	ds, err := hooks.Claim(ctx, nil, 2, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got := subOf(ds)
	if len(ds) != 4 || !slices.Equal(got[one.ID], []string{evs[0].ID, evs[1].ID}) && !slices.Equal(got[one.ID], []string{evs[1].ID, evs[0].ID}) ||
		len(got[two.ID]) != 2 || slices.Contains(got[two.ID], evs[2].ID) {
		t.Fatalf("first claim of 2 per subscription: %v", got)
	}
	for _, d := range ds {
		s := one
		if d.Subscription == two.ID {
			s = two
		}
		var body []byte
		var at time.Time
		if err := db.Pool().QueryRow(ctx, `SELECT body, created_at FROM events WHERE id = $1`, d.EventID).Scan(&body, &at); err != nil {
			t.Fatal(err)
		}
		i := slices.IndexFunc(evs, func(e core.Event) bool { return e.ID == d.EventID })
		if d.ID <= 0 || d.URL != s.URL || string(d.Secret) != string(s.Secret) || string(d.Body) != string(body) ||
			d.Attempt != 1 || !d.OccurredAt.Equal(at) || i < 0 || !d.OccurredAt.Equal(evs[i].OccurredAt) {
			t.Errorf("claimed %+v; subscription %+v, body %s, occurred %v", d, s, body, at)
		}
	}

	// What this instance has in flight counts against perSub; other
	// subscriptions are still claimed.
	ds, err = hooks.Claim(ctx, map[string]int{one.ID: 2}, 2, time.Minute)
	if got := subOf(ds); err != nil || len(ds) != 1 || !slices.Equal(got[two.ID], []string{evs[2].ID}) {
		t.Fatalf("claim with 2 of 2 in flight for one: %v %v", got, err)
	}
	ds, err = hooks.Claim(ctx, map[string]int{one.ID: 1, two.ID: 5}, 2, time.Minute)
	if got := subOf(ds); err != nil || len(ds) != 1 || !slices.Equal(got[one.ID], []string{evs[2].ID}) {
		t.Fatalf("claim with 1 of 2 in flight for one: %v %v", got, err)
	}
	if ds, err := hooks.Claim(ctx, nil, 10, time.Minute); err != nil || len(ds) != 0 {
		t.Fatalf("claimed deliveries were claimed again: %+v %v", ds, err)
	}

	// A lease that ends gives the delivery back, for its next attempt. The
	// lease is next_attempt_at, the claim's time plus the lease; the test
	// ends it by moving that instant back by the lease, not by waiting.
	e := emitEvent(t, db, core.BusinessEvent(core.NewUUID()))
	ds, err = hooks.Claim(ctx, nil, 10, time.Hour)
	if err != nil || len(ds) != 2 {
		t.Fatalf("claim of a new event: %+v %v", ds, err)
	}
	ids := []int64{ds[0].ID, ds[1].ID}
	if n := countRows(t, db, `SELECT count(*) FROM webhook_deliveries WHERE id = ANY($1) AND next_attempt_at = updated_at + interval '1 hour'`, ids); n != 2 {
		t.Fatalf("%d of 2 deliveries leased for the hour asked", n)
	}
	if again, err := hooks.Claim(ctx, nil, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("claimed again within the lease: %+v %v", again, err)
	}
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = next_attempt_at - interval '1 hour' WHERE id = ANY($1)`, ids); err != nil {
		t.Fatal(err)
	}
	again, err := hooks.Claim(ctx, nil, 10, time.Minute)
	if err != nil || len(again) != 2 {
		t.Fatalf("after the lease: %+v", again)
	}
	for _, d := range again {
		if d.EventID != e.ID || d.Attempt != 2 || !slices.ContainsFunc(ds, func(x event.Delivery) bool { return x.ID == d.ID }) {
			t.Errorf("after the lease: %+v, want attempt 2 of %v", d, ds)
		}
	}
}

// Two instances claiming at once share the deliveries: none twice, none
// left.
func TestIntegrationWebhooks_ConcurrentClaimsNeverShareADelivery(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	for range 4 {
		subscribe(t, db, "", "*")
	}
	for range 50 {
		emitEvent(t, db, core.BusinessEvent(core.NewUUID()))
	}
	other, err := postgres.New(ctx, db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	claimed := make([][]int64, 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, s := range []*postgres.Store{db, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				ds, err := s.Webhooks().Claim(ctx, nil, 3, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				for _, d := range ds {
					claimed[i] = append(claimed[i], d.ID)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	seen := map[int64]bool{}
	for _, c := range claimed {
		for _, id := range c {
			if seen[id] {
				t.Errorf("delivery %d claimed twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != 200 || len(claimed[0])+len(claimed[1]) != 200 {
		t.Fatalf("claimed %d + %d deliveries (%d distinct), want 200", len(claimed[0]), len(claimed[1]), len(seen))
	}
	if n := countRows(t, db, `SELECT count(*) FROM webhook_deliveries WHERE attempts = 1 AND next_attempt_at > now()`); n != 200 {
		t.Fatalf("%d deliveries leased once, want 200", n)
	}
	t.Logf("claimed %d and %d", len(claimed[0]), len(claimed[1]))
}

// delivery reads how delivery id stands.
func delivery(t *testing.T, db *postgres.Store, id int64) (state string, attempts int, status *int, lastErr *string, next time.Time) {
	t.Helper()
	err := db.Pool().QueryRow(context.Background(), `
		SELECT state, attempts, last_status, last_error, next_attempt_at FROM webhook_deliveries WHERE id = $1`, id).
		Scan(&state, &attempts, &status, &lastErr, &next)
	if err != nil {
		t.Fatal(err)
	}
	return state, attempts, status, lastErr, next
}

func TestIntegrationWebhooks_SettleRecordsOutcomes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	sub := subscribe(t, db, "", "*")
	var evs []core.Event
	for range 4 {
		evs = append(evs, emitEvent(t, db, core.BusinessEvent(core.NewUUID())))
	}
	ds, err := hooks.Claim(ctx, nil, 10, time.Minute)
	if err != nil || len(ds) != 4 {
		t.Fatalf("claim: %+v %v", ds, err)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].ID < ds[j].ID })
	delivered, retried, failed, stale := ds[0], ds[1], ds[2], ds[3]

	retryAt := time.Now().Add(time.Hour)
	err = hooks.Settle(ctx, []event.Outcome{
		{ID: delivered.ID, Attempt: 1, State: event.Delivered, Result: event.Result{Status: 204}},
		{ID: retried.ID, Attempt: 1, State: event.Pending, NextAt: retryAt, Result: event.Result{Status: 503, Err: "status 503"}},
		{ID: failed.ID, Attempt: 1, State: event.Failed, Result: event.Result{Err: "timeout"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if state, n, status, lastErr, _ := delivery(t, db, delivered.ID); state != "delivered" || n != 1 || status == nil || *status != 204 || lastErr != nil {
		t.Errorf("delivered: %s %d %v %v", state, n, status, lastErr)
	}
	if state, n, status, lastErr, next := delivery(t, db, retried.ID); state != "pending" || n != 1 || status == nil || *status != 503 ||
		lastErr == nil || *lastErr != "status 503" || !next.Equal(retryAt.Truncate(time.Microsecond)) {
		t.Errorf("retried: %s %d %v %v %v, want next attempt at %v", state, n, status, lastErr, next, retryAt)
	}
	if state, n, status, lastErr, _ := delivery(t, db, failed.ID); state != "failed" || n != 1 || status != nil || lastErr == nil || *lastErr != "timeout" {
		t.Errorf("failed: %s %d %v %v", state, n, status, lastErr)
	}

	recs, err := hooks.AllDeliveries(ctx, true, 100)
	if err != nil || len(recs) != 1 {
		t.Fatalf("failed deliveries: %+v %v", recs, err)
	}
	if r := recs[0]; r.ID != failed.ID || r.Subscription != sub.ID || r.EventID != evs[2].ID || r.Type != core.BusinessUpdated ||
		r.State != event.Failed || r.Attempts != 1 || r.LastStatus != 0 || r.LastError != "timeout" ||
		!r.OccurredAt.Equal(evs[2].OccurredAt) || r.UpdatedAt.IsZero() {
		t.Errorf("failed delivery: %+v", r)
	}
	recs, err = hooks.AllDeliveries(ctx, false, 3)
	if err != nil || len(recs) != 3 || recs[0].ID != stale.ID || recs[1].ID != failed.ID || recs[2].ID != retried.ID {
		t.Fatalf("latest 3 deliveries, newest first: %+v %v", recs, err)
	}
	if recs[2].LastStatus != 503 || recs[2].LastError != "status 503" || recs[2].State != event.Pending {
		t.Errorf("retried delivery: %+v", recs[2])
	}

	// A retry is not due before its time.
	if ds, err := hooks.Claim(ctx, nil, 10, time.Minute); err != nil || len(ds) != 0 {
		t.Fatalf("claimed before the retry was due: %+v %v", ds, err)
	}
	// Its time comes (moved into the past rather than waited for).
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = $1`, retried.ID); err != nil {
		t.Fatal(err)
	}
	again, err := hooks.Claim(ctx, nil, 10, time.Minute)
	if err != nil || len(again) != 1 || again[0].ID != retried.ID || again[0].Attempt != 2 {
		t.Fatalf("the retry: %+v", again)
	}

	// The lease of attempt 1 of stale ends, and another instance claims
	// attempt 2: attempt 1's pending or failed outcome comes too late and
	// is dropped; its success is kept.
	if _, err := db.Pool().Exec(ctx, `UPDATE webhook_deliveries SET next_attempt_at = now() - interval '1 second' WHERE id = $1`, stale.ID); err != nil {
		t.Fatal(err)
	}
	ds, err = hooks.Claim(ctx, nil, 10, time.Minute)
	if err != nil || len(ds) != 1 || ds[0].ID != stale.ID || ds[0].Attempt != 2 {
		t.Fatalf("claim after the lease ended: %+v %v", ds, err)
	}
	_, _, _, _, lease := delivery(t, db, stale.ID)
	err = hooks.Settle(ctx, []event.Outcome{
		{ID: stale.ID, Attempt: 1, State: event.Pending, NextAt: time.Now().Add(time.Hour), Result: event.Result{Status: 500, Err: "status 500"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := hooks.Settle(ctx, []event.Outcome{{ID: stale.ID, Attempt: 1, State: event.Failed, Result: event.Result{Err: "timeout"}}}); err != nil {
		t.Fatal(err)
	}
	if state, n, status, lastErr, next := delivery(t, db, stale.ID); state != "pending" || n != 2 || status != nil || lastErr != nil || !next.Equal(lease) {
		t.Errorf("a stale pending or failed outcome was recorded: %s %d %v %v %v (lease %v)", state, n, status, lastErr, next, lease)
	}
	if err := hooks.Settle(ctx, []event.Outcome{{ID: stale.ID, Attempt: 1, State: event.Delivered, Result: event.Result{Status: 200}}}); err != nil {
		t.Fatal(err)
	}
	if err := hooks.Settle(ctx, []event.Outcome{{ID: stale.ID, Attempt: 2, State: event.Failed, Result: event.Result{Err: "timeout"}}}); err != nil {
		t.Fatal(err)
	}
	if state, _, status, lastErr, _ := delivery(t, db, stale.ID); state != "delivered" || status == nil || *status != 200 || lastErr != nil {
		t.Errorf("a stale success: %s %v %v, want delivered and kept", state, status, lastErr)
	}
	if err := hooks.Settle(ctx, nil); err != nil {
		t.Errorf("settle of nothing: %v", err)
	}
}

func TestIntegrationWebhooks_ListAndRemove(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	biz := core.NewUUID()
	first := subscribe(t, db, "", "*")
	second := subscribe(t, db, biz, "location.created", "business.updated")
	if first.CreatedAt.IsZero() || time.Since(first.CreatedAt) > time.Minute {
		t.Fatalf("Add did not set CreatedAt: %v", first.CreatedAt)
	}

	subs, err := hooks.All(ctx)
	if err != nil || len(subs) != 2 {
		t.Fatalf("list: %+v %v", subs, err)
	}
	for i, want := range []event.Subscription{first, second} {
		got := subs[i]
		if got.ID != want.ID || got.URL != want.URL || !slices.Equal(got.Types, want.Types) || got.BusinessID != want.BusinessID ||
			!got.CreatedAt.Equal(want.CreatedAt) || got.Secret != nil {
			t.Errorf("listed %+v, want %+v without its secret", got, want)
		}
	}

	for _, bad := range []event.Subscription{
		{ID: core.NewUUID(), URL: "ftp://hooks.example", Types: []string{"*"}, Secret: []byte("s")},
		{ID: core.NewUUID(), URL: "https://hooks.example", Types: []string{}, Secret: []byte("s")},
		{ID: first.ID, URL: "https://hooks.example", Types: []string{"*"}, Secret: []byte("s")},
	} {
		if err := hooks.Add(ctx, &bad); err == nil {
			t.Errorf("added %+v", bad)
		}
	}

	for _, id := range []string{core.NewUUID(), "not-a-uuid", ""} {
		if err := hooks.Remove(ctx, id); !errors.Is(err, event.ErrSubscriptionNotFound) {
			t.Errorf("remove %q: %v", id, err)
		}
	}

	e := emitEvent(t, db, core.BusinessEvent(biz))
	if got := receivers(t, db, e.ID); len(got) != 2 {
		t.Fatalf("deliveries before the removal: %v", got)
	}
	if err := hooks.Remove(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if got := receivers(t, db, e.ID); !slices.Equal(got, []string{second.ID}) {
		t.Errorf("deliveries after removing the first subscription: %v", got)
	}
	if subs, err := hooks.All(ctx); err != nil || len(subs) != 1 || subs[0].ID != second.ID {
		t.Errorf("list after the removal: %+v %v", subs, err)
	}
	if err := hooks.Remove(ctx, first.ID); !errors.Is(err, event.ErrSubscriptionNotFound) {
		t.Errorf("removing it again: %v", err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM events`); n != 1 {
		t.Errorf("removing a subscription removed events: %d left", n)
	}
}

func TestIntegrationWebhooks_StreamClaimsUnpublishedOldestFirst(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	var evs []core.Event
	for range 5 {
		evs = append(evs, emitEvent(t, db, core.LocationEvent(core.LocationUpdated, 1, "")))
	}
	var seq int64
	rows := eventsAfter(t, db, &seq)

	first, err := hooks.ClaimUnpublished(ctx, 3, time.Minute)
	if err != nil || len(first) != 3 {
		t.Fatalf("first claim: %+v %v", first, err)
	}
	for i, m := range first {
		if m.Seq != rows[i].Seq || m.ID != evs[i].ID || m.Type != core.LocationUpdated || string(m.Body) != string(rows[i].Body) {
			t.Errorf("message %d: %+v, want %+v", i, m, rows[i])
		}
	}
	rest, err := hooks.ClaimUnpublished(ctx, 10, time.Hour)
	if err != nil || len(rest) != 2 || rest[0].ID != evs[3].ID || rest[1].ID != evs[4].ID {
		t.Fatalf("second claim: %+v %v", rest, err)
	}
	seqs := []int64{rest[0].Seq, rest[1].Seq}
	// Leased for the hour asked: publish_after is the claim's now() plus an
	// hour, so at most an hour past this query's now() (and not a minute less).
	if n := countRows(t, db, `SELECT count(*) FROM events WHERE seq = ANY($1)
		AND publish_after BETWEEN now() + interval '59 minutes' AND now() + interval '1 hour'`, seqs); n != 2 {
		t.Fatalf("%d of 2 events leased for the hour asked", n)
	}
	if none, err := hooks.ClaimUnpublished(ctx, 10, time.Minute); err != nil || len(none) != 0 {
		t.Fatalf("leased events claimed again: %+v %v", none, err)
	}
	if err := hooks.MarkPublished(ctx, []int64{first[0].Seq, first[1].Seq, first[2].Seq}); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM events WHERE published_at IS NOT NULL`); n != 3 {
		t.Errorf("%d events marked published, want 3", n)
	}

	// The unmarked events come back once their lease ends (moved back by
	// the lease rather than waited for).
	if _, err := db.Pool().Exec(ctx, `UPDATE events SET publish_after = publish_after - interval '1 hour' WHERE seq = ANY($1)`, seqs); err != nil {
		t.Fatal(err)
	}
	again, err := hooks.ClaimUnpublished(ctx, 10, time.Minute)
	if err != nil || len(again) != 2 || again[0].Seq != rest[0].Seq || again[1].Seq != rest[1].Seq {
		t.Fatalf("after the lease: %+v", again)
	}
	// Published events never come back, whatever their lease.
	if _, err := db.Pool().Exec(ctx, `UPDATE events SET publish_after = '-infinity'`); err != nil {
		t.Fatal(err)
	}
	if all, err := hooks.ClaimUnpublished(ctx, 10, time.Minute); err != nil || len(all) != 2 || all[0].ID != evs[3].ID {
		t.Fatalf("claim after every lease ended: %+v %v", all, err)
	}
	if err := hooks.MarkPublished(ctx, nil); err != nil {
		t.Errorf("marking nothing: %v", err)
	}
}

func TestIntegrationWebhooks_PurgeEventsKeepsRecentAndPendingOnes(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	hooks := db.Webhooks()
	subscribe(t, db, "", "business.updated")
	emitBiz := func() string { return emitEvent(t, db, core.BusinessEvent(core.NewUUID())).ID }
	oldDelivered, oldFailed, oldPending, oldUnwanted, sixDays, recent :=
		emitBiz(), emitBiz(), emitBiz(), emitEvent(t, db, core.LocationEvent(core.LocationCreated, 1, "")).ID, emitBiz(), emitBiz()
	for _, u := range []struct {
		id, state, age string
	}{
		{oldDelivered, "delivered", "8 days"}, {oldFailed, "failed", "8 days"}, {oldPending, "pending", "8 days"},
		{oldUnwanted, "", "8 days"}, {sixDays, "delivered", "6 days 23 hours"}, {recent, "delivered", "0"},
	} {
		if _, err := db.Pool().Exec(ctx, `UPDATE events SET created_at = now() - $2::interval WHERE id = $1`, u.id, u.age); err != nil {
			t.Fatal(err)
		}
		if u.state == "" {
			continue
		}
		if _, err := db.Pool().Exec(ctx, `
			UPDATE webhook_deliveries SET state = $2 WHERE event_seq = (SELECT seq FROM events WHERE id = $1)`, u.id, u.state); err != nil {
			t.Fatal(err)
		}
	}
	n, err := hooks.PurgeEvents(ctx, 100)
	if err != nil || n != 3 {
		t.Fatalf("purge: %d %v, want 3", n, err)
	}
	rows, err := db.Pool().Query(ctx, `SELECT id FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		left = append(left, id)
	}
	if want := []string{oldPending, sixDays, recent}; !slices.Equal(left, want) {
		t.Errorf("events left %v, want %v", left, want)
	}
	if n := countRows(t, db, `SELECT count(*) FROM webhook_deliveries`); n != 3 {
		t.Errorf("%d deliveries left, want those of the 3 events kept", n)
	}
	if n, err := hooks.PurgeEvents(ctx, 100); err != nil || n != 0 {
		t.Errorf("second purge: %d %v", n, err)
	}

	// Two instances purging at once delete every row once.
	if _, err := db.Pool().Exec(ctx, `
		WITH e AS (
			INSERT INTO events (id, type, body, created_at)
			SELECT 'evt_old' || i, 'business.updated', '{}', now() - interval '8 days' FROM generate_series(1, 1000) i
			RETURNING seq)
		INSERT INTO webhook_deliveries (event_seq, subscription_id, state)
		SELECT e.seq, s.id, 'delivered' FROM e, webhook_subscriptions s`); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.New(ctx, db.Pool().Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	counts := make([]int64, 2)
	var wg sync.WaitGroup
	for i, s := range []*postgres.Store{db, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := s.Webhooks().PurgeEvents(ctx, 50)
				if err != nil {
					t.Error(err)
					return
				}
				counts[i] += n
				if n < 50 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if counts[0]+counts[1] != 1000 {
		t.Errorf("purged %d + %d, want 1000", counts[0], counts[1])
	}
	if n := countRows(t, db, `SELECT count(*) FROM events`); n != 3 {
		t.Errorf("%d events left, want 3", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM webhook_deliveries`); n != 3 {
		t.Errorf("%d deliveries left, want 3", n)
	}
}

func TestIntegrationStore_ListenWakesOnCommittedEvents(t *testing.T) {
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls, errs := make(chan struct{}, 16), make(chan error, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		db.Listen(ctx, func() { calls <- struct{}{} }, func(err error) { errs <- err })
	}()
	wait := func(what string) {
		t.Helper()
		select {
		case <-calls:
		case err := <-errs:
			t.Fatalf("%s: %v", what, err)
		case <-time.After(2 * time.Second):
			t.Fatalf("fn not called %s", what)
		}
	}
	wait("at start")
	if err := updateBusiness(db, b.ID, func(x *business.Business) error { x.Name = "New"; return nil }); err != nil {
		t.Fatal(err)
	}
	wait("after a business update")
	emitEvent(t, db, core.BusinessEvent(b.ID))
	wait("after an event of the outbox")

	// A lost connection is told, and Listen listens again (and calls fn
	// for what it may have missed).
	var killed bool
	if err := db.Pool().QueryRow(context.Background(), `
		SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN '||$1`, postgres.EventsChannel).Scan(&killed); err != nil || !killed {
		t.Fatalf("end the listening connection: %v %v", killed, err)
	}
	select {
	case <-errs:
	case <-time.After(2 * time.Second):
		t.Fatal("a lost connection was not told")
	}
	select {
	case <-calls:
	case <-time.After(3 * time.Second):
		t.Fatal("fn not called after listening again")
	}
	emitEvent(t, db, core.BusinessEvent(b.ID))
	wait("after an event, listening again")

	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Listen did not return once its context was done")
	}
	select {
	case err := <-errs:
		t.Errorf("Listen told an error when stopped: %v", err)
	default:
	}
}
