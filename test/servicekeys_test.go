package test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/webhook"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/test/testenv"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// serviceKeysRedisDB is the Redis database of these tests (others use 9
// and 11).
const serviceKeysRedisDB = 12

// startTogether builds two apps at once over the world's services, as two
// instances starting together, and runs them.
func (w *world) startTogether(edit func(*app.Config)) (*server, *server) {
	w.t.Helper()
	cfg := w.config(edit)
	type built struct {
		a      *app.App
		err    error
		ctx    context.Context
		cancel context.CancelFunc
	}
	var b [2]built
	var wg sync.WaitGroup
	for i := range b {
		b[i].ctx, b[i].cancel = context.WithCancel(context.Background())
		wg.Go(func() { b[i].a, b[i].err = app.New(b[i].ctx, cfg, slog.New(slog.DiscardHandler)) })
	}
	wg.Wait()
	var servers [2]*server
	for i := range b {
		if b[i].err != nil {
			b[i].cancel()
			w.t.Fatalf("start app %d: %v", i, b[i].err)
		}
		servers[i] = w.run(b[i].ctx, b[i].cancel, b[i].a)
	}
	return servers[0], servers[1]
}

// waitSigned waits until rc took at least n events and checks each is
// signed with secret.
func waitSigned(t *testing.T, rc *receiver, secret string, n int) {
	t.Helper()
	eventually(t, 15*time.Second, fmt.Sprintf("the receiver took %d events", n), func() bool { return rc.count() >= n })
	for _, d := range rc.events() {
		if err := verifyWebhook(secret, d.header, d.body, d.at); err != nil {
			t.Fatalf("%s: signature: %v", d.ev.Type, err)
		}
	}
}

// Two instances starting at once on an empty database, with an integration
// EHR and Redis and no key configured at all (no SERVICE_KEYS,
// EHR_CREDENTIALS_KEY or blob key), start and share the one key they
// generate: a search one cached is a hit on the other, an Idempotency-Key
// claimed on one replays on the other, and a webhook the CLI sealed is
// delivered signed by either.
func TestServiceKeys_InstancesStartingTogetherShareTheGeneratedKey(t *testing.T) {
	w := newWorld(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:6379", DB: serviceKeysRedisDB})
	if err := rdb.FlushDB(context.Background()).Err(); err != nil {
		testenv.Missing(t, fmt.Sprintf("Redis at 127.0.0.1:6379 unreachable (%v)", err), "run make test, which starts it (scripts/ensure-services.sh)")
	}
	t.Cleanup(func() { rdb.FlushDB(context.Background()); rdb.Close() })
	search := newFakeEHR(t, "clinica", fhirPatient("a-1", "Lopez", "Ana", "1980-02-01", "MRN-1"))
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	cfg := searchAndBookFile(t, search, bot.URL())
	if n := w.count("service_keys"); n != 0 {
		t.Fatalf("a fresh database holds %d service keys", n)
	}
	one, two := w.startTogether(func(c *app.Config) {
		c.EHR, c.RedisURL, c.SearchCacheTTL = cfg, fmt.Sprintf("redis://127.0.0.1:6379/%d", serviceKeysRedisDB), time.Minute
		c.BlobKeys = nil
	})
	if n := w.count("service_keys"); n != 1 {
		t.Fatalf("%d service keys stored, want 1", n)
	}
	for _, s := range []*server{one, two} {
		if r := s.do("GET", "/readyz", "", nil); r.status != 200 {
			t.Fatalf("readyz: %d %s", r.status, r.body)
		}
	}
	tok := w.token("reception-" + core.NewUUID())

	// The cache in Redis is sealed under the shared key.
	if r, a := one.search(tok, `{"query":"Ana"}`); r.status != 200 || a.Metadata.CacheHit || a.Data.TotalCount != 1 {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	if r, a := two.search(tok, `{"query":"Ana"}`); r.status != 200 || !a.Metadata.CacheHit {
		t.Fatalf("the other instance's search is not a cache hit: %d %s", r.status, r.body)
	}

	// The Idempotency-Key fingerprints are keyed by it.
	first, appt := one.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", 9, 30), "Idempotency-Key", "together-1")
	again, same := two.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", 9, 30), "Idempotency-Key", "together-1")
	if first.status != 201 || again.status != 201 || again.header.Get("Idempotency-Replayed") != "true" || appt["id"] != same["id"] {
		t.Fatalf("replay on the other instance: %d %s / %d %s", first.status, first.body, again.status, again.body)
	}

	// The admin CLI, without SERVICE_KEYS either, seals with it.
	rc := newReceiver(t, nil)
	_, secret := (&hooks{w: w}).add(rc.url(), "appointment.booked")
	one.stop() // the other instance delivers
	if r, _ := two.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", 11, 30)); r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	waitSigned(t, rc, secret, 1)
	if n := w.count("service_keys"); n != 1 {
		t.Fatalf("%d service keys stored, want 1", n)
	}
}

// A rotation: SERVICE_KEYS=k1, then k2,k1 (k2 seals, k1 still opens),
// then k2 alone. Webhook secrets and Idempotency-Keys of k1 keep working
// while k1 is listed; once it is gone its secrets no longer open, unless
// reseal-webhooks sealed them again under k2.
func TestServiceKeys_RotationKeepsWebhooksAndIdempotencyKeys(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	cfg := integrationFile(t, "wsbot", bot.URL(), "")
	k1, k2 := keyring.Named{ID: "k1", Key: key(0x11)}, keyring.Named{ID: "k2", Key: key(0x22)}
	h := &hooks{w: w, keys: []keyring.Named{k1}}
	start := func() *server {
		return w.start(func(c *app.Config) {
			c.EHR = cfg
			h.configure(c)
		})
	}
	tok := w.token("reception")
	book := func(s *server, hour int, header ...string) (response, map[string]any) {
		t.Helper()
		return s.ehrCall("POST", "/appointment/customer", tok, slotAt("dr-ana", hour, 30), header...)
	}
	secretOf := func(id string) []byte {
		var sealed []byte
		if err := w.db.QueryRow(context.Background(), `SELECT secret FROM webhook_subscriptions WHERE id = $1`, id).Scan(&sealed); err != nil {
			t.Fatal(err)
		}
		return sealed
	}
	opensUnder := func(k keyring.Named, id string, sealed []byte) bool {
		s, err := webhook.NewSealer(webhookKeyFor(k.Key))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Open(id, sealed)
		return err == nil
	}

	// Under k1: a webhook, and a booking with an Idempotency-Key.
	s := start()
	old := newReceiver(t, nil)
	oldID, oldSecret := h.add(old.url(), "appointment.booked")
	first, appt := book(s, 9, "Idempotency-Key", "rotation-1")
	if first.status != 201 {
		t.Fatalf("book: %d %s", first.status, first.body)
	}
	waitSigned(t, old, oldSecret, 1)
	s.stop()

	// k2 first, k1 kept.
	h.keys = []keyring.Named{k2, k1}
	s = start()
	again, same := book(s, 9, "Idempotency-Key", "rotation-1")
	if again.status != 201 || again.header.Get("Idempotency-Replayed") != "true" || same["id"] != appt["id"] {
		t.Fatalf("the Idempotency-Key after the rotation: %d %s, want the replay of %v", again.status, again.body, appt["id"])
	}
	if r, _ := book(s, 10); r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	waitSigned(t, old, oldSecret, 2)
	fresh := newReceiver(t, nil)
	freshID, freshSecret := h.add(fresh.url(), "appointment.booked")
	if sealed := secretOf(freshID); !opensUnder(k2, freshID, sealed) || opensUnder(k1, freshID, sealed) {
		t.Fatal("a new secret is not sealed under k2, the first key")
	}
	if !opensUnder(k1, oldID, secretOf(oldID)) {
		t.Fatal("the secret of k1 changed")
	}
	s.stop()

	// k2 alone: the secret sealed under k1 no longer opens.
	h.keys = []keyring.Named{k2}
	s = start()
	if r, _ := book(s, 11); r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	waitSigned(t, fresh, freshSecret, 1)
	eventually(t, 15*time.Second, "the delivery to the webhook of k1 fails", func() bool {
		var n int
		err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM webhook_deliveries
			WHERE subscription_id = $1 AND last_error = 'secret cannot be opened'`, oldID).Scan(&n)
		return err == nil && n == 1
	})
	if n := old.requests(); n != 2 {
		t.Fatalf("the webhook of k1 got %d requests, want the 2 before", n)
	}
	// Nor does the fingerprint of k1 match: hence k1 stays listed for the
	// Idempotency-Key retention (24 hours).
	if r := s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt("dr-ana", 9, 30)), "Content-Type", "application/json", "Idempotency-Key", "rotation-1"); r.status != 409 || r.errorCode(t) != "idempotency_key_reused" {
		t.Fatalf("the Idempotency-Key of k1 under k2 alone: %d %s", r.status, r.body)
	}
	s.stop()

	// reseal-webhooks (k2 first, k1 still listed) seals every secret under
	// k2; then k2 alone opens them all.
	h.keys = []keyring.Named{k2, k1}
	out, errOut, code := carebridgeEnv(t, w.dbURL, h.env(), "admin", "reseal-webhooks")
	var resealed struct {
		Resealed   int      `json:"resealed"`
		Unopenable []string `json:"unopenable"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &resealed) != nil || resealed.Resealed != 2 || resealed.Unopenable == nil || len(resealed.Unopenable) != 0 {
		t.Fatalf("reseal-webhooks: exit %d, printed %q: %s", code, out, errOut)
	}
	if sealed := secretOf(oldID); !opensUnder(k2, oldID, sealed) || opensUnder(k1, oldID, sealed) {
		t.Fatal("the secret of k1 is not resealed under k2")
	}
	h.keys = []keyring.Named{k2}
	s = start()
	if r, _ := book(s, 12); r.status != 201 {
		t.Fatalf("book: %d %s", r.status, r.body)
	}
	waitSigned(t, old, oldSecret, 3)
	waitSigned(t, fresh, freshSecret, 2)
}

// A webhook secret sealed by an earlier version, under the key it derived
// from EHR_CREDENTIALS_KEY, still opens: that key material is among the
// legacy keys, which open and never seal.
func TestServiceKeys_WebhookSecretsOfEarlierVersionsStillOpen(t *testing.T) {
	w := newWorld(t)
	material := key(0x33)
	legacy, err := webhook.NewSealer(webhookKeyFor(material))
	if err != nil {
		t.Fatal(err)
	}
	id := core.NewUUID()
	text, raw := webhook.NewSecret()
	rc := newReceiver(t, nil)
	if _, err := w.db.Exec(context.Background(), `INSERT INTO webhook_subscriptions (id, url, event_types, secret) VALUES ($1, $2, $3, $4)`,
		id, rc.url(), []string{"business.updated"}, legacy.Seal(id, raw)); err != nil {
		t.Fatal(err)
	}
	s := w.start(func(c *app.Config) {
		c.ServiceKeys = []keyring.Named{{ID: "k1", Key: key(0x44)}}
		c.LegacyKeys = []keyring.Named{{ID: "legacy-ehr-credentials", Key: material}}
	})
	biz := w.createBusiness("owner")
	s.bdo("PATCH", "/business/"+biz, w.token("owner"), map[string]string{"name": "Renamed"}).data(t, 200, "Business updated successfully")
	waitSigned(t, rc, text, 1)
}
