package redis

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/test/testenv"
)

// DefaultTestURL is the server the tests use when REDISTEST_URL is unset;
// `make test` starts it.
const DefaultTestURL = "redis://127.0.0.1:6379/0"

func testURL() string {
	if u := os.Getenv("REDISTEST_URL"); u != "" {
		return u
	}
	return DefaultTestURL
}

func testKey(t testing.TB) []byte {
	t.Helper()
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// newCache connects to the test server with key, or skips when it is
// unreachable outside CI (with CI set, an unreachable server fails).
func newCache(t testing.TB, key []byte) *Cache {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := New(ctx, testURL(), key)
	if err != nil {
		testenv.Missing(t, fmt.Sprintf("Redis at %s unreachable (%v)", testURL(), err), "run make test, which starts it (scripts/ensure-services.sh)")
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prefix returns a random key prefix whose keys are deleted when the test
// ends.
func prefix(t testing.TB, c *Cache) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := "cbtest:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.client.Scan(ctx, 0, p+"*", 100).Iterator()
		for iter.Next(ctx) {
			c.client.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("clean up %s*: %v", p, err)
		}
	})
	return p
}

func TestIntegrationCache_RoundTrip(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()

	if _, ok, err := c.getRaw(ctx, p+"missing"); err != nil || ok {
		t.Fatalf("Get missing = %v, %v", ok, err)
	}
	value := []byte(`{"name":"Ana Lima","birthDate":"1980-02-01"}`)
	if err := c.setRaw(ctx, p+"k", value, time.Minute); err != nil {
		t.Fatal(err)
	}
	got, ok, err := c.getRaw(ctx, p+"k")
	if err != nil || !ok || !bytes.Equal(got, value) {
		t.Fatalf("Get = %q, %v, %v", got, ok, err)
	}
	if err := c.setRaw(ctx, p+"empty", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := c.getRaw(ctx, p+"empty"); err != nil || !ok || got == nil || len(got) != 0 {
		t.Fatalf("empty value: %q, %v, %v", got, ok, err)
	}
	if err := c.setRaw(ctx, p+"k", value, 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.getRaw(ctx, p+"k"); ok {
		t.Fatal("hit after Set with ttl 0")
	}
}

// The value is stored with its ttl; its end is brought forward in Redis
// (PEXPIREAT in the past) rather than waited for.
func TestIntegrationCache_ValueExpires(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	if err := c.setRaw(ctx, p+"k", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	if pttl := c.client.PTTL(ctx, p+"k").Val(); pttl <= 59*time.Minute || pttl > time.Hour {
		t.Fatalf("PTTL = %v, want just under an hour", pttl)
	}
	if _, ok, _ := c.getRaw(ctx, p+"k"); !ok {
		t.Fatal("miss before the ttl")
	}
	if err := c.client.PExpireAt(ctx, p+"k", time.Unix(1, 0)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.getRaw(ctx, p+"k"); ok || err != nil {
		t.Fatalf("after the ttl: %v, %v", ok, err)
	}
}

func TestIntegrationCache_StoresNoPlaintext(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	// Words of ten bytes and more: random ciphertext holds none by chance.
	plain := "Anazqmarker Limazqmarker 1980-02-01 MRN-zq778899"
	if err := c.setRaw(ctx, p+"k", []byte(plain), time.Minute); err != nil {
		t.Fatal(err)
	}
	raw, err := c.client.Get(ctx, p+"k").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range append(strings.Fields(plain), plain) {
		if bytes.Contains(raw, []byte(part)) {
			t.Errorf("raw value in Redis contains %q", part)
		}
	}
	if len(raw) != 1+12+len(plain)+16 || raw[0] != 1 {
		t.Errorf("raw value is %d bytes starting %d, want version 1 || nonce || ciphertext || tag", len(raw), raw[0])
	}
	// A random nonce per value: the same value twice is stored differently.
	if err := c.setRaw(ctx, p+"k2", []byte(plain), time.Minute); err != nil {
		t.Fatal(err)
	}
	if raw2 := c.client.Get(ctx, p+"k2").Val(); raw2 == string(raw) {
		t.Error("two sealings of one value are equal")
	}
}

func TestIntegrationCache_ValueMovedToAnotherKeyIsAMiss(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	if err := c.setRaw(ctx, p+"alice", []byte("alice's records"), time.Minute); err != nil {
		t.Fatal(err)
	}
	raw := c.client.Get(ctx, p+"alice").Val()
	if err := c.client.Set(ctx, p+"mallory", raw, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := c.getRaw(ctx, p+"mallory"); ok || err != nil {
		t.Fatalf("moved value: %q, %v, %v; want a miss", v, ok, err)
	}
	if n := c.client.Exists(ctx, p+"mallory").Val(); n != 0 {
		t.Error("the value that did not decrypt was kept")
	}
	if _, ok, _ := c.getRaw(ctx, p+"alice"); !ok {
		t.Error("the original stopped decrypting")
	}
}

func TestIntegrationCache_UndecryptableValuesAreMisses(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	if err := c.setRaw(ctx, p+"k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Another instance with another key (a rotated key) misses.
	other := newCache(t, testKey(t))
	if _, ok, err := other.getRaw(ctx, p+"k"); ok || err != nil {
		t.Fatalf("other key: %v, %v", ok, err)
	}
	for name, raw := range map[string]string{"garbage": "not sealed", "empty": "", "short": "\x01abc"} {
		c.client.Set(ctx, p+name, raw, time.Minute)
		if _, ok, err := c.getRaw(ctx, p+name); ok || err != nil {
			t.Errorf("%s: %v, %v; want a miss", name, ok, err)
		}
	}
}

func TestIntegrationCache_IncrSharedByInstances(t *testing.T) {
	key := testKey(t)
	a, b := newCache(t, key), newCache(t, key)
	p := prefix(t, a)
	ctx := context.Background()
	var wg sync.WaitGroup
	const perInstance = 50
	for _, c := range []*Cache{a, b} {
		wg.Go(func() {
			for range perInstance {
				if _, _, err := c.Incr(ctx, p+"rl", time.Minute); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	n, left, err := b.Incr(ctx, p+"rl", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2*perInstance+1 {
		t.Errorf("count = %d, want %d", n, 2*perInstance+1)
	}
	if left <= 50*time.Second || left > time.Minute {
		t.Errorf("time left = %v, want just under a minute", left)
	}
}

// Time passing is the counter's ttl shortened in Redis (PEXPIRE), and the
// window's end its expiry brought forward (PEXPIREAT in the past): no waits.
func TestIntegrationCache_IncrWindowExpires(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	const window = time.Minute
	n, left, err := c.Incr(ctx, p+"rl", window)
	if err != nil || n != 1 || left != window {
		t.Fatalf("first Incr = %d, %v, %v", n, left, err)
	}
	// Later increments keep the window's expiry: 40 s of it have gone.
	if err := c.client.PExpire(ctx, p+"rl", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	n, left, err = c.Incr(ctx, p+"rl", window)
	if err != nil || n != 2 || left <= 0 || left > 20*time.Second {
		t.Fatalf("second Incr = %d, %v, %v; want 2 and at most the 20s left", n, left, err)
	}
	if err := c.client.PExpireAt(ctx, p+"rl", time.Unix(1, 0)).Err(); err != nil {
		t.Fatal(err)
	}
	n, left, err = c.Incr(ctx, p+"rl", window)
	if err != nil || n != 1 || left != window {
		t.Fatalf("after the window: Incr = %d, %v, %v; want a new window", n, left, err)
	}
	if _, _, err := c.Incr(ctx, p+"rl", 0); err == nil {
		t.Error("Incr with ttl 0 accepted")
	}
}

func TestIntegrationCache_IncrRepairsCounterWithoutExpiry(t *testing.T) {
	c := newCache(t, testKey(t))
	p := prefix(t, c)
	ctx := context.Background()
	c.client.Set(ctx, p+"rl", 5, 0) // no expiry
	n, left, err := c.Incr(ctx, p+"rl", time.Minute)
	if err != nil || n != 6 || left != time.Minute {
		t.Fatalf("Incr = %d, %v, %v", n, left, err)
	}
	if pttl := c.client.PTTL(ctx, p+"rl").Val(); pttl <= 0 {
		t.Errorf("counter left without expiry: %v", pttl)
	}
}

func TestNew_Errors(t *testing.T) {
	ctx := context.Background()
	if _, err := New(ctx, DefaultTestURL, make([]byte, 16)); err == nil || !strings.Contains(err.Error(), "32 bytes") {
		t.Errorf("short key: %v", err)
	}
	// A bad URL is reported without its password.
	for _, u := range []string{
		"redis://user:hunter2@127.0.0.1:6379/0\x7f",
		"redis://user:hunter2@127.0.0.1:6379/x",
		"http://user:hunter2@127.0.0.1:6379/",
		"redis://user:hunter2@[::1",
	} {
		_, err := New(ctx, u, testKey(t))
		if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "invalid REDIS_URL") {
			t.Errorf("bad URL: %v", err)
		}
		t.Log(err)
	}
	// A server that does not answer fails at start.
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := New(ctx, "redis://127.0.0.1:1/0", testKey(t)); err == nil || !strings.Contains(err.Error(), "ping") {
		t.Errorf("unreachable server: %v", err)
	}
}
