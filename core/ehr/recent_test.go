package ehr

import (
	"fmt"
	"testing"
	"time"
)

func TestRecent_ExpiresAndStaysBounded(t *testing.T) {
	now := time.Now()
	r := newRecent(3, 1<<20)
	r.put("a", view{Sources: []string{"x"}}, 10, now.Add(time.Second), now)
	if c, ok := r.get("a", now); !ok || c.Sources[0] != "x" {
		t.Fatal("fresh entry missed")
	}
	if _, ok := r.get("a", now.Add(time.Second)); ok {
		t.Fatal("expired entry served")
	}
	for i := range 10 {
		r.put(fmt.Sprint(i), view{}, 10, now.Add(time.Hour), now)
	}
	if len(r.entries) > 3 {
		t.Fatalf("%d entries, bound 3", len(r.entries))
	}
	if _, ok := r.get("9", now); !ok {
		t.Fatal("the newest entry is not kept")
	}
}

func TestRecent_BoundedInBytes(t *testing.T) {
	now := time.Now()
	r := newRecent(100, 1000)
	r.put("huge", view{}, 251, now.Add(time.Hour), now)
	if _, ok := r.get("huge", now); ok {
		t.Fatal("an answer of more than a quarter of the bound is kept")
	}
	for i := range 10 {
		r.put(fmt.Sprint(i), view{}, 200, now.Add(time.Hour), now)
		if r.bytes > 1000 {
			t.Fatalf("%d bytes after %d entries of 200, bound 1000", r.bytes, i+1)
		}
	}
	if _, ok := r.get("9", now); !ok {
		t.Fatal("the newest entry is not kept")
	}
	r.put("9", view{}, 100, now.Add(time.Hour), now) // replaced, not counted twice
	sum := 0
	for _, e := range r.entries {
		sum += e.size
	}
	if sum != r.bytes {
		t.Fatalf("bytes %d, entries weigh %d", r.bytes, sum)
	}
}

func TestSearch_CacheHitInProcessSkipsTheCachePort(t *testing.T) {
	cache := memCache()
	s := NewService(FixedSystems{Searched: []System{sys("a", ehrWith([]Patient{pat("1", "A", "B", "2000-01-01")}, nil))}}, cache, Config{CacheTTL: time.Minute})
	for range 3 {
		if r, err := s.Search(caller("u"), SearchRequest{Query: "x"}); err != nil || r.TotalCount != 1 {
			t.Fatalf("%+v %v", r, err)
		}
	}
	if n := len(cache.GetCalls()); n != 1 {
		t.Fatalf("cache port read %d times; the hits after the first store come from the process", n)
	}
	// An answer decoded from the shared cache is trusted in process only briefly.
	other := NewService(FixedSystems{Searched: []System{sys("a", ehrWith(nil, nil))}}, cache, Config{CacheTTL: time.Minute})
	clock := time.Now()
	other.now = func() time.Time { return clock }
	other.Search(caller("u"), SearchRequest{Query: "x"})
	clock = clock.Add(recentFromShared + time.Second)
	other.Search(caller("u"), SearchRequest{Query: "x"})
	if n := len(cache.GetCalls()); n != 3 {
		t.Fatalf("cache port read %d times, want 3", n)
	}
}
