package ehr

import (
	"sync"
	"time"
)

// recent keeps the decoded answers of the latest searches in this process,
// so a cache hit does not decode the merged list again (the costliest part
// of a cached search). Entries live no longer than the cache's own, and a
// few seconds when they came from a shared cache whose remaining lifetime
// is unknown.
type recent struct {
	mu      sync.Mutex
	max     int
	entries map[string]recentEntry
}

type recentEntry struct {
	value   Answer
	expires time.Time
}

// recentFromShared bounds an entry decoded from the shared cache.
const recentFromShared = 5 * time.Second

func newRecent(max int) *recent {
	return &recent{max: max, entries: make(map[string]recentEntry, max)}
}

func (r *recent) get(key string, now time.Time) (Answer, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[key]
	if !ok || !now.Before(e.expires) {
		return Answer{}, false
	}
	return e.value, true
}

func (r *recent) put(key string, v Answer, expires time.Time, now time.Time) {
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
