package memory

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestCache(maxEntries int) (*Cache, *clock) {
	clk := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	c := New(maxEntries, 0)
	c.now = clk.now
	return c, clk
}

func get(t *testing.T, c *Cache, key string) (string, bool) {
	t.Helper()
	v, ok, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return valueOf(v), ok
}

// answer is a test value: an answer that names value as its one source.
func answer(value string) ehr.Answer { return ehr.Answer{Sources: []string{value}} }

func valueOf(a ehr.Answer) string {
	if len(a.Sources) == 0 {
		return ""
	}
	return a.Sources[0]
}

func set(t *testing.T, c *Cache, key, value string, ttl time.Duration) {
	t.Helper()
	if err := c.Set(context.Background(), key, answer(value), ttl); err != nil {
		t.Fatal(err)
	}
}

func incr(t *testing.T, c *Cache, key string, ttl time.Duration) (int64, time.Duration) {
	t.Helper()
	n, left, err := c.Incr(context.Background(), key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	return n, left
}

func TestCache_GetSetRoundTrip(t *testing.T) {
	c, _ := newTestCache(10)
	if _, ok := get(t, c, "k"); ok {
		t.Fatal("hit on an empty cache")
	}
	set(t, c, "k", "v1", time.Minute)
	if v, ok := get(t, c, "k"); !ok || v != "v1" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	set(t, c, "k", "v2", time.Minute)
	if v, _ := get(t, c, "k"); v != "v2" {
		t.Fatalf("overwrite: Get = %q", v)
	}
	if err := c.Set(context.Background(), "empty", ehr.Answer{}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := c.Get(context.Background(), "empty"); !ok || v.Patients != nil || v.Sources != nil {
		t.Fatalf("empty answer: %+v, %v", v, ok)
	}
}

func TestCache_EntryExpiresAfterItsOwnTTL(t *testing.T) {
	c, clk := newTestCache(10)
	set(t, c, "short", "s", time.Second)
	set(t, c, "long", "l", time.Minute)
	clk.advance(999 * time.Millisecond)
	if _, ok := get(t, c, "short"); !ok {
		t.Fatal("expired before its ttl")
	}
	clk.advance(time.Millisecond)
	if _, ok := get(t, c, "short"); ok {
		t.Fatal("hit at its ttl")
	}
	if _, ok := get(t, c, "long"); !ok {
		t.Fatal("the longer entry expired with the shorter")
	}
	clk.advance(time.Minute)
	if _, ok := get(t, c, "long"); ok {
		t.Fatal("hit after its ttl")
	}
	if c.values.Len() != 0 {
		t.Errorf("expired entries kept: %d", c.values.Len())
	}
}

func TestCache_SetWithoutTTLRemoves(t *testing.T) {
	c, _ := newTestCache(10)
	set(t, c, "k", "v", time.Minute)
	set(t, c, "k", "v", 0)
	if _, ok := get(t, c, "k"); ok {
		t.Fatal("hit after Set with ttl 0")
	}
	set(t, c, "k", "v", -time.Second)
	if _, ok := get(t, c, "k"); ok {
		t.Fatal("hit after Set with a negative ttl")
	}
}

func TestCache_EvictsLeastRecentlyUsed(t *testing.T) {
	c, _ := newTestCache(3)
	set(t, c, "a", "1", time.Minute)
	set(t, c, "b", "2", time.Minute)
	set(t, c, "c", "3", time.Minute)
	get(t, c, "a") // a is now the most recently used; b the least
	set(t, c, "d", "4", time.Minute)
	if _, ok := get(t, c, "b"); ok {
		t.Error("b, the least recently used, was kept")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := get(t, c, k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	if c.values.Len() != 3 {
		t.Errorf("len = %d, want 3", c.values.Len())
	}
}

// Entries are bounded in bytes too: one record answer may hold a few
// records or some hundred thousand.
func TestCache_BoundedInBytes(t *testing.T) {
	c, _ := newTestCache(1000)
	big := func(n int) ehr.Answer {
		return ehr.Answer{RecordSets: []ehr.SourceRecords{{Source: "a", Records: make([]ehr.Record, n)}}}
	}
	one := big(100).Size()
	c.maxBytes = 10 * one
	for i := range 30 {
		if err := c.Set(context.Background(), fmt.Sprint(i), big(100), time.Minute); err != nil {
			t.Fatal(err)
		}
		if c.bytes > c.maxBytes {
			t.Fatalf("%d bytes after %d answers, bound %d", c.bytes, i+1, c.maxBytes)
		}
	}
	if c.values.Len() != 10 {
		t.Errorf("%d answers kept, room for 10", c.values.Len())
	}
	if _, ok, _ := c.Get(context.Background(), "29"); !ok {
		t.Error("the newest answer is not kept")
	}
	if _, ok, _ := c.Get(context.Background(), "0"); ok {
		t.Error("the oldest answer is still kept")
	}
	c.Set(context.Background(), "huge", big(300), time.Minute) // more than a quarter of the bound
	if _, ok, _ := c.Get(context.Background(), "huge"); ok {
		t.Error("an answer of more than a quarter of the bound is kept")
	}
	c.Set(context.Background(), "29", ehr.Answer{}, 0) // removed: its bytes go with it
	sum := 0
	for _, k := range c.values.Keys() {
		e, _ := c.values.Peek(k)
		sum += e.size
	}
	if sum != c.bytes {
		t.Errorf("bytes %d, entries weigh %d", c.bytes, sum)
	}
}

func TestNew_DefaultBound(t *testing.T) {
	for _, n := range []int{0, -1} {
		if c := New(n, n); c.maxCounters != DefaultMaxEntries || c.maxBytes != DefaultMaxBytes {
			t.Errorf("New(%d) bound = %d", n, c.maxCounters)
		}
	}
}

func TestCache_IncrWindow(t *testing.T) {
	c, clk := newTestCache(10)
	for want := int64(1); want <= 3; want++ {
		n, left := incr(t, c, "caller", time.Minute)
		if n != want || left != time.Minute {
			t.Fatalf("Incr #%d = %d, %v", want, n, left)
		}
	}
	clk.advance(45 * time.Second)
	// Later increments do not extend the window.
	if n, left := incr(t, c, "caller", time.Minute); n != 4 || left != 15*time.Second {
		t.Fatalf("Incr = %d, %v; want 4, 15s", n, left)
	}
	if n, _ := incr(t, c, "other", time.Minute); n != 1 {
		t.Fatalf("other key starts at %d", n)
	}
	clk.advance(15 * time.Second)
	if n, left := incr(t, c, "caller", time.Minute); n != 1 || left != time.Minute {
		t.Fatalf("after the window: Incr = %d, %v; want a new window", n, left)
	}
	if _, _, err := c.Incr(context.Background(), "k", 0); err == nil {
		t.Error("Incr with ttl 0 accepted")
	}
}

func TestCache_CountersAreBounded(t *testing.T) {
	c, clk := newTestCache(3)
	incr(t, c, "a", 10*time.Second)
	incr(t, c, "b", time.Minute)
	incr(t, c, "c", time.Minute)
	incr(t, c, "d", time.Minute) // full: a, closest to expiry, makes room
	if len(c.counters) != 3 {
		t.Fatalf("counters = %d, want 3", len(c.counters))
	}
	if _, ok := c.counters["a"]; ok {
		t.Error("a kept, though it was closest to expiry")
	}
	if n, _ := incr(t, c, "b", time.Minute); n != 2 {
		t.Errorf("b = %d, want 2", n)
	}

	// Expired counters are removed before any live one.
	clk.advance(2 * time.Minute)
	incr(t, c, "e", time.Hour)
	incr(t, c, "f", time.Hour)
	if len(c.counters) != 2 {
		t.Errorf("expired counters kept: %d", len(c.counters))
	}
}

func TestCache_SweepsExpiredCounters(t *testing.T) {
	c, clk := newTestCache(100)
	for i := range 50 {
		incr(t, c, fmt.Sprint("k", i), time.Second)
	}
	clk.advance(sweepInterval)
	incr(t, c, "new", time.Second)
	if len(c.counters) != 1 {
		t.Errorf("counters after a sweep = %d, want 1", len(c.counters))
	}
}

func TestCache_ConcurrentUse(t *testing.T) {
	c := New(64, 0)
	ctx := context.Background()
	const workers, rounds = 8, 500
	var total atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				key := fmt.Sprint("k", (w*rounds+i)%100)
				if err := c.Set(ctx, key, answer(key), time.Minute); err != nil {
					t.Error(err)
					return
				}
				if v, ok, err := c.Get(ctx, key); err != nil || (ok && valueOf(v) != key) {
					t.Errorf("Get(%s) = %+v, %v, %v", key, v, ok, err)
					return
				}
				if _, _, err := c.Incr(ctx, "shared", time.Hour); err != nil {
					t.Error(err)
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	if n, _ := incr(t, c, "shared", time.Hour); n != total.Load()+1 {
		t.Errorf("shared counter = %d, want %d", n, total.Load()+1)
	}
	if c.values.Len() > 64 {
		t.Errorf("values = %d, bound 64", c.values.Len())
	}
}
