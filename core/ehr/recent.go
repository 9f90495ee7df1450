package ehr

import (
	"sync"
	"time"
)

// recent keeps the matched answers of the latest searches in this
// process, by cache key and person links, so a cache hit neither decodes
// nor matches the answer again (the costliest parts of a cached search).
// Entries live no longer than the cache's own, and a few seconds when they
// came from a shared cache whose remaining lifetime is unknown. It holds at
// most max entries and about maxBytes bytes (an entry weighs what the
// answer it was matched from does: the view shares its strings); an
// answer of more than a quarter of that is not kept.
type recent struct {
	mu       sync.Mutex
	max      int
	maxBytes int
	bytes    int
	entries  map[string]recentEntry
}

type recentEntry struct {
	value   view
	size    int
	expires time.Time
}

// recentFromShared bounds an entry decoded from the shared cache.
const recentFromShared = 5 * time.Second

func newRecent(max, maxBytes int) *recent {
	return &recent{max: max, maxBytes: maxBytes, entries: make(map[string]recentEntry, max)}
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

func (r *recent) put(key string, v view, size int, expires time.Time, now time.Time) {
	if size > r.maxBytes/4 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.entries[key]; ok {
		r.bytes -= old.size
		delete(r.entries, key)
	}
	if len(r.entries) >= r.max || r.bytes+size > r.maxBytes {
		for k, e := range r.entries {
			if !now.Before(e.expires) {
				r.bytes -= e.size
				delete(r.entries, k)
			}
		}
		if len(r.entries) >= r.max || r.bytes+size > r.maxBytes {
			clear(r.entries) // cheaper than LRU bookkeeping; the cache still has them
			r.bytes = 0
		}
	}
	r.entries[key] = recentEntry{value: v, size: size, expires: expires}
	r.bytes += size
}
