package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core/event"
)

// --- Webhooks a practice manages itself (/api/v1/webhooks).

// hookAPI is a caller of /api/v1/webhooks acting for one business.
type hookAPI struct {
	s        *server
	tok, biz string // biz "": no X-Business-Id
}

func (a hookAPI) do(method, path string, body any) response {
	a.s.t.Helper()
	var h []string
	if a.biz != "" {
		h = append(h, "X-Business-Id", a.biz)
	}
	var r *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.s.t.Fatal(err)
		}
		r, h = bytes.NewReader(b), append(h, "Content-Type", "application/json")
		return a.s.do(method, "/api/v1/webhooks"+path, a.tok, r, h...)
	}
	return a.s.do(method, "/api/v1/webhooks"+path, a.tok, nil, h...)
}

// ok checks r's status and decodes its JSON body into v (when not nil).
func (r response) ok(t *testing.T, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("body %q: %v", r.body, err)
		}
	}
}

type webhookOut struct {
	ID             string   `json:"id"`
	URL            string   `json:"url"`
	Events         []string `json:"events"`
	Description    string   `json:"description"`
	BusinessID     string   `json:"businessId"`
	Enabled        bool     `json:"enabled"`
	DisabledReason *string  `json:"disabledReason"`
	Secret         string   `json:"secret"`
}

type deliveryOut struct {
	ID         int64   `json:"id"`
	EventID    string  `json:"eventId"`
	Type       string  `json:"type"`
	Status     string  `json:"status"`
	Attempts   int     `json:"attempts"`
	LastStatus *int    `json:"lastStatus"`
	LastError  *string `json:"lastError"`
}

func (a hookAPI) create(url string, events ...string) webhookOut {
	a.s.t.Helper()
	var out webhookOut
	a.do("POST", "", map[string]any{"url": url, "events": events, "description": "front desk"}).ok(a.s.t, 201, &out)
	if !strings.HasPrefix(out.Secret, "whsec_") || out.ID == "" || !out.Enabled || out.BusinessID != a.biz {
		a.s.t.Fatalf("created %+v", out)
	}
	return out
}

func (a hookAPI) deliveries(id, query string) []deliveryOut {
	a.s.t.Helper()
	var page struct{ Items []deliveryOut }
	a.do("GET", "/"+id+"/deliveries"+query, nil).ok(a.s.t, 200, &page)
	return page.Items
}

// touch makes one business.updated event of biz, as its owner.
func touch(s *server, biz, ownerTok string) {
	s.t.Helper()
	s.bdo("PATCH", "/business/"+biz, ownerTok, map[string]string{"name": fmt.Sprintf("Clinic %d", time.Now().UnixNano())}).
		data(s.t, 200, "Business updated successfully")
}

// fastEvents delivers within a test's patience.
func fastEvents(c *app.Config) {
	c.Events = event.Config{Timeout: 2 * time.Second, RetryBase: 50 * time.Millisecond, MaxDelay: 200 * time.Millisecond,
		Poll: 50 * time.Millisecond}
}

func signatures(d delivery) []string { return strings.Fields(d.header.Get("webhook-signature")) }

// A practice subscribes by API, and the delivery verifies with the secret
// shown once; a rotation signs with both secrets for its window (moved in
// PostgreSQL here), then with the new one only. CLI and API subscriptions
// are one kind.
func TestIntegrationWebhooksAPI_CreateDeliverAndRotate(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	s := w.start(func(c *app.Config) { h.configure(c); fastEvents(c); c.WebhookAllowPrivate = true })
	biz := w.createBusiness("owner-a")
	owner := w.token("owner-a")
	api := hookAPI{s: s, tok: owner, biz: biz}
	rc := newReceiver(t, nil)

	sub := api.create(rc.url(), "business.updated")
	var got webhookOut
	api.do("GET", "/"+sub.ID, nil).ok(t, 200, &got)
	if got.Secret != "" || got.URL != rc.url() || got.Description != "front desk" {
		t.Fatalf("GET %+v: the secret is shown once only", got)
	}

	touch(s, biz, owner)
	eventually(t, 10*time.Second, "the first event delivered", func() bool { return rc.count() == 1 })
	first := rc.events()[0]
	if err := verifyWebhook(sub.Secret, first.header, first.body, time.Now()); err != nil || len(signatures(first)) != 1 {
		t.Fatalf("first delivery: %v, signatures %v", err, signatures(first))
	}

	var rotated struct{ Secret string }
	api.do("POST", "/"+sub.ID+"/rotate-secret", nil).ok(t, 200, &rotated)
	if !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == sub.Secret {
		t.Fatalf("rotated secret %q", rotated.Secret)
	}
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "the second event delivered", func() bool { return rc.count() == 2 })
	second := rc.events()[1]
	if len(signatures(second)) != 2 {
		t.Fatalf("during the window: signatures %v, want two", signatures(second))
	}
	for _, secret := range []string{sub.Secret, rotated.Secret} {
		if err := verifyWebhook(secret, second.header, second.body, time.Now()); err != nil {
			t.Errorf("during the window: %v", err)
		}
	}

	// The window ends (moved in PostgreSQL, not slept).
	if _, err := w.db.Exec(context.Background(),
		`UPDATE webhook_subscriptions SET previous_secret_expires_at = now() - interval '1 second' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "the third event delivered", func() bool { return rc.count() == 3 })
	third := rc.events()[2]
	if len(signatures(third)) != 1 || verifyWebhook(rotated.Secret, third.header, third.body, time.Now()) != nil ||
		verifyWebhook(sub.Secret, third.header, third.body, time.Now()) == nil {
		t.Fatalf("after the window: signatures %v: want the new secret's only", signatures(third))
	}

	// The CLI's subscription with --business is the business's too, and
	// the CLI lists the API's.
	cliID, _ := h.add(newReceiver(t, nil).url(), "*", "--business", biz)
	var page struct {
		Items      []webhookOut
		TotalCount int
	}
	api.do("GET", "?limit=10", nil).ok(t, 200, &page)
	if page.TotalCount != 2 || len(page.Items) != 2 || page.Items[0].ID != cliID || page.Items[1].ID != sub.ID {
		t.Fatalf("list %+v, want the CLI's then the API's (newest first)", page)
	}
	out, errOut, code := carebridgeEnv(t, w.dbURL, h.env(), "admin", "list-webhooks")
	if code != 0 || !strings.Contains(out, sub.ID) || !strings.Contains(out, `"origin":"api"`) {
		t.Fatalf("list-webhooks: %d %s %s", code, out, errOut)
	}

	// Each change was audited, committed with it.
	var n int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM audit_events
		WHERE action IN ('webhook.create', 'webhook.rotate_secret') AND outcome = 'success' AND resource_id = $1 AND business_id = $2`,
		sub.ID, biz).Scan(&n); err != nil || n != 2 {
		t.Fatalf("audit events of the subscription: %d, %v", n, err)
	}

	api.do("DELETE", "/"+sub.ID, nil).ok(t, 204, nil)
	if code := api.do("GET", "/"+sub.ID, nil).errorCode(t); code != "subscription_not_found" {
		t.Fatalf("after DELETE: %s", code)
	}
}

// A receiver that answers 500 then 2xx: the log shows both attempts; a
// retry and a replay deliver the same event ids again; a test event goes
// to that subscription only.
func TestIntegrationWebhooksAPI_DeliveryLogRetryReplayAndTest(t *testing.T) {
	w := newWorld(t)
	h := newHooks(w)
	s := w.start(func(c *app.Config) { h.configure(c); fastEvents(c); c.WebhookAllowPrivate = true })
	biz := w.createBusiness("owner-a")
	owner := w.token("owner-a")
	api := hookAPI{s: s, tok: owner, biz: biz}
	flaky := newReceiver(t, func(n int, rw http.ResponseWriter, _ *http.Request) bool {
		if n == 1 {
			rw.WriteHeader(http.StatusInternalServerError)
			return true
		}
		return false
	})
	other := newReceiver(t, nil)
	sub := api.create(flaky.url(), "*")
	h.add(other.url(), "*", "--business", biz)

	touch(s, biz, owner)
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "both events delivered", func() bool { return flaky.count() == 2 && other.count() == 2 })
	// A delivery is settled after its receiver answered: the log may lag
	// the receivers by that moment.
	var log []deliveryOut
	eventually(t, 10*time.Second, "both deliveries logged as succeeded", func() bool {
		log = api.deliveries(sub.ID, "?status=succeeded")
		return len(log) == 2
	})
	for _, d := range log {
		if d.Attempts != 2 || d.LastStatus == nil || *d.LastStatus != 204 || d.Type != "business.updated" || d.Status != "succeeded" {
			t.Errorf("delivery %+v: want 2 attempts (500, then 204)", d)
		}
	}
	flaky.mu.Lock()
	newer, _ := time.Parse(time.RFC3339Nano, flaky.got[log[0].EventID].ev.OccurredAt)
	older, _ := time.Parse(time.RFC3339Nano, flaky.got[log[1].EventID].ev.OccurredAt)
	flaky.mu.Unlock()
	if newer.Before(older) {
		t.Errorf("log not newest first: %s, then %s", newer, older)
	}
	if len(api.deliveries(sub.ID, "?status=failed")) != 0 || len(api.deliveries(sub.ID, "?status=pending")) != 0 {
		t.Error("failed or pending deliveries listed")
	}
	if code := api.do("GET", "/"+sub.ID+"/deliveries?status=delivered", nil).errorCode(t); code != "invalid_webhook" {
		t.Errorf("status=delivered: %s", code)
	}

	// Retry one: the same webhook-id, once more.
	var q struct{ Queued int }
	api.do("POST", fmt.Sprintf("/%s/deliveries/%d/retry", sub.ID, log[0].ID), nil).ok(t, 202, &q)
	attempts := func(id string) int { flaky.mu.Lock(); defer flaky.mu.Unlock(); return flaky.attempts[id] }
	eventually(t, 10*time.Second, "the retried delivery sent again", func() bool { return attempts(log[0].EventID) == 3 })

	// Replay the range: every event again, under its own id.
	api.do("POST", "/"+sub.ID+"/replay", map[string]string{
		"since": time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), "until": time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
	}).ok(t, 202, &q)
	if q.Queued != 2 {
		t.Fatalf("replay queued %d, want 2", q.Queued)
	}
	eventually(t, 10*time.Second, "the replayed events sent again", func() bool {
		return attempts(log[0].EventID) == 4 && attempts(log[1].EventID) == 3
	})
	if code := api.do("POST", "/"+sub.ID+"/replay", map[string]string{
		"since": time.Now().Add(-8 * 24 * time.Hour).UTC().Format(time.RFC3339), "until": time.Now().UTC().Format(time.RFC3339),
	}).errorCode(t); code != "invalid_webhook" {
		t.Errorf("a replay 8 days back: %s", code)
	}

	// A test event: to this subscription only.
	var tested struct{ EventID string }
	api.do("POST", "/"+sub.ID+"/test", nil).ok(t, 202, &tested)
	eventually(t, 10*time.Second, "the test event delivered", func() bool { return flaky.count() == 3 })
	if ev := flaky.events()[2].ev; ev.Type != "webhook.test" || ev.ID != tested.EventID || ev.Data["webhookId"] != sub.ID {
		t.Fatalf("test event %+v", ev)
	}
	touch(s, biz, owner) // a later event reaches the other receiver: the test event came before it, or never
	eventually(t, 10*time.Second, "a later event delivered", func() bool { return other.count() == 3 })
	for _, d := range other.events() {
		if d.ev.Type == "webhook.test" {
			t.Fatal("the test event reached another subscription")
		}
	}
	var published bool
	if err := w.db.QueryRow(context.Background(), `SELECT published_at IS NOT NULL FROM events WHERE id = $1`, tested.EventID).
		Scan(&published); err != nil || !published {
		t.Fatalf("the test event is for the message stream: %v", err)
	}
}

// A subscription whose every delivery failed for 24 hours is disabled and
// counted; it gets no new deliveries until enabled again.
func TestIntegrationWebhooksAPI_DisabledAfterADayOfFailures(t *testing.T) {
	w := newWorld(t)
	s := w.start(func(c *app.Config) { fastEvents(c); c.WebhookAllowPrivate = true })
	biz := w.createBusiness("owner-a")
	owner := w.token("owner-a")
	api := hookAPI{s: s, tok: owner, biz: biz}
	var healthy atomic.Bool
	rc := newReceiver(t, func(_ int, rw http.ResponseWriter, _ *http.Request) bool {
		if !healthy.Load() {
			rw.WriteHeader(http.StatusBadGateway)
		}
		return !healthy.Load()
	})
	sub := api.create(rc.url(), "business.updated")
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "a failed attempt", func() bool { return rc.requests() >= 1 })
	// The run of failures began a day ago (moved in PostgreSQL).
	if _, err := w.db.Exec(context.Background(), `UPDATE webhook_subscriptions SET failing_since = now() - interval '25 hours' WHERE id = $1`, sub.ID); err != nil {
		t.Fatal(err)
	}
	var got webhookOut
	eventually(t, 10*time.Second, "the subscription disabled", func() bool {
		api.do("GET", "/"+sub.ID, nil).ok(t, 200, &got)
		return !got.Enabled
	})
	if got.DisabledReason == nil || *got.DisabledReason == "" {
		t.Fatalf("disabled without a reason: %+v", got)
	}
	// Counted, and its pending deliveries failed, right after the commit
	// that disabled it.
	eventually(t, 10*time.Second, "the disabling counted", func() bool {
		return s.metric("carebridge_webhook_subscriptions_disabled_total") == 1
	})
	eventually(t, 10*time.Second, "no pending delivery of a disabled subscription", func() bool {
		return len(api.deliveries(sub.ID, "?status=pending")) == 0
	})
	touch(s, biz, owner)
	if n := len(api.deliveries(sub.ID, "")); n != 1 {
		t.Fatalf("%d deliveries after an event while disabled, want still 1", n)
	}
	healthy.Store(true)
	api.do("PATCH", "/"+sub.ID, map[string]any{"enabled": true}).ok(t, 200, &got)
	if !got.Enabled || got.DisabledReason != nil {
		t.Fatalf("enabled again: %+v", got)
	}
	touch(s, biz, owner)
	eventually(t, 10*time.Second, "a new event delivered once enabled", func() bool { return rc.count() == 1 })
}
