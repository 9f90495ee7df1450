// Package memory is the in-process ehr.Cache, used when REDIS_URL is unset:
// search answers, kept as they are (nothing is encoded in process), in a
// bounded LRU with a lifetime per entry, and the rate-limit counters in a
// bounded map whose windows expire. It serves one
// service instance; several instances need the redis adapter to share
// counters and results.
package memory

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/carebridge/carebridge/core/ehr"
)

// DefaultMaxEntries and DefaultMaxBytes are the bounds New uses when given
// zero or less.
const (
	DefaultMaxEntries = 10000
	DefaultMaxBytes   = 256 << 20
)

// sweepInterval is how often Incr removes expired counters.
const sweepInterval = time.Minute

var _ ehr.Cache = (*Cache)(nil)

// Cache is an in-process ehr.Cache. It holds at most maxEntries values of
// about maxBytes in all (ehr.Answer.Size; the least recently used goes
// first, and an answer of more than a quarter of maxBytes is not kept:
// one record answer can hold hundreds of thousands of records) and at
// most maxEntries counters
// (expired ones are removed every minute and whenever the map is full;
// when every counter is live, the one closest to expiry makes room). It
// is safe for concurrent use and needs no Close.
type Cache struct {
	now func() time.Time // the clock; tests replace it

	mu       sync.Mutex
	values   *simplelru.LRU[string, entry]
	bytes    int // the values' sizes
	maxBytes int

	cmu         sync.Mutex
	counters    map[string]*counter
	maxCounters int
	lastSweep   time.Time
}

type entry struct {
	value   ehr.Answer
	size    int
	expires time.Time
}

type counter struct {
	n       int64
	expires time.Time
}

// New returns a cache holding at most maxEntries values of about maxBytes
// in all, and maxEntries counters (the defaults when zero or less).
func New(maxEntries, maxBytes int) *Cache {
	if maxEntries <= 0 {
		maxEntries = DefaultMaxEntries
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	c := &Cache{
		now:         time.Now,
		maxBytes:    maxBytes,
		counters:    make(map[string]*counter),
		maxCounters: maxEntries,
	}
	values, err := simplelru.NewLRU(maxEntries, func(_ string, e entry) { c.bytes -= e.size })
	if err != nil { // only for a size <= 0, excluded above
		panic(err)
	}
	c.values = values
	return c
}

// Get returns the answer of key, or false when it is absent or expired.
// The answer is the one Set was given, not a copy: nothing is encoded in
// process, and callers never modify an answer.
func (c *Cache) Get(_ context.Context, key string) (ehr.Answer, bool, error) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.values.Get(key)
	if !ok {
		return ehr.Answer{}, false, nil
	}
	if !now.Before(e.expires) {
		c.values.Remove(key)
		return ehr.Answer{}, false, nil
	}
	return e.value, true, nil
}

// Set stores a under key for ttl; a ttl of zero or less removes key, and
// so does an answer too large to keep.
func (c *Cache) Set(_ context.Context, key string, a ehr.Answer, ttl time.Duration) error {
	now := c.now()
	size := a.Size()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.values.Remove(key)
	if ttl <= 0 || size > c.maxBytes/4 {
		return nil
	}
	for c.bytes+size > c.maxBytes && c.values.Len() > 0 {
		c.values.RemoveOldest()
	}
	c.values.Add(key, entry{value: a, size: size, expires: now.Add(ttl)})
	c.bytes += size
	return nil
}

// Incr adds one to the counter key, which starts at zero and expires ttl
// after its first increment, and returns the new count and the time until
// the counter expires. ttl must be positive.
func (c *Cache) Incr(_ context.Context, key string, ttl time.Duration) (int64, time.Duration, error) {
	if ttl <= 0 {
		return 0, 0, errors.New("memory: counter ttl must be positive")
	}
	now := c.now()
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if now.Sub(c.lastSweep) >= sweepInterval {
		c.sweep(now)
	}
	ctr, ok := c.counters[key]
	if ok && !now.Before(ctr.expires) {
		ok = false // expired: a new window
	}
	if !ok {
		if ctr == nil && len(c.counters) >= c.maxCounters {
			c.makeRoom(now)
		}
		ctr = &counter{expires: now.Add(ttl)}
		c.counters[key] = ctr
	}
	ctr.n++
	return ctr.n, ctr.expires.Sub(now), nil
}

// sweep removes the expired counters; cmu is held.
func (c *Cache) sweep(now time.Time) {
	for k, ctr := range c.counters {
		if !now.Before(ctr.expires) {
			delete(c.counters, k)
		}
	}
	c.lastSweep = now
}

// makeRoom frees one place in the full counter map: expired counters go
// first; when none has expired, the one closest to expiry; cmu is held.
func (c *Cache) makeRoom(now time.Time) {
	c.sweep(now)
	if len(c.counters) < c.maxCounters {
		return
	}
	var (
		victim  string
		soonest time.Time
		found   bool
	)
	for k, ctr := range c.counters {
		if !found || ctr.expires.Before(soonest) {
			victim, soonest, found = k, ctr.expires, true
		}
	}
	delete(c.counters, victim)
}
