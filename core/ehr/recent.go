package ehr

import (
	"sync"
	"time"
)

// recent keeps the matched answers of the latest searches in this
// process, by cache key and person links, so a cache hit neither decodes
// nor matches the answer again (the costliest parts of a cached search).
// Entries live no longer than the cache's own, and a few seconds when they
// came from a shared cache whose remaining lifetime is unknown.
type recent struct {
	mu      sync.Mutex
	max     int
	entries map[string]recentEntry
}

type recentEntry struct {
	value   view
	expires time.Time
}

// recentFromShared bounds an entry decoded from the shared cache.
const recentFromShared = 5 * time.Second

func newRecent(max int) *recent {
	return &recent{max: max, entries: make(map[string]recentEntry, max)}
}

func (r *recent) get(key string, now time.Time) (view, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok || !now.Before(e.expires) {
		return view{}, false
	}
	return e.value, true
}

func (r *recent) put(key string, v view, expires time.Time, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.entries) >= r.max {
		for k, e := range r.entries {
			if !now.Before(e.expires) {
				delete(r.entries, k)
			}
		}
		if len(r.entries) >= r.max {
			clear(r.entries) // cheaper than LRU bookkeeping; the cache still has them
		}
	}
	r.entries[key] = recentEntry{value: v, expires: expires}
}
