package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestIntegrationWithLock_SerialisesTheSameKeyOnly(t *testing.T) {
	db := pgtest.Store(t)
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := db.WithLock(context.Background(), "agent:dr-1", func(context.Context) error {
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				inside.Add(-1)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Fatalf("%d holders at once", most.Load())
	}
	// Another key is not blocked by a held one.
	done := make(chan struct{})
	go db.WithLock(context.Background(), "agent:a", func(context.Context) error { <-done; return nil })
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := db.WithLock(ctx, "agent:b", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("another key waited: %v", err)
	}
	close(done)
	boom := errors.New("boom")
	if err := db.WithLock(context.Background(), "agent:a", func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("fn's error: %v", err)
	}
}

func TestIntegrationIdempotency_ClaimCompleteReplay(t *testing.T) {
	ctx := context.Background()
	idem := pgtest.Store(t).Idempotency()
	if _, done, err := idem.Claim(ctx, "alice", "k1", "fp-a"); err != nil || done {
		t.Fatalf("first claim: %v %v", done, err)
	}
	if _, _, err := idem.Claim(ctx, "alice", "k1", "fp-a"); !errors.Is(err, ehr.ErrIdempotencyInProgress) {
		t.Fatalf("claim while running: %v", err)
	}
	if err := idem.Complete(ctx, "alice", "k1", []byte(`{"appointment":{"ID":"a-1"}}`)); err != nil {
		t.Fatal(err)
	}
	out, done, err := idem.Claim(ctx, "alice", "k1", "fp-a")
	if err != nil || !done || string(out) != `{"appointment": {"ID": "a-1"}}` {
		t.Fatalf("replay: %q %v %v", out, done, err)
	}
	if _, _, err := idem.Claim(ctx, "alice", "k1", "fp-b"); !errors.Is(err, ehr.ErrIdempotencyKeyReused) {
		t.Fatalf("another request with the key: %v", err)
	}
	if _, done, err := idem.Claim(ctx, "bob", "k1", "fp-b"); err != nil || done {
		t.Fatalf("the key is per caller: %v %v", done, err)
	}
	if err := idem.Release(ctx, "bob", "k1"); err != nil {
		t.Fatal(err)
	}
	if _, done, err := idem.Claim(ctx, "bob", "k1", "fp-c"); err != nil || done {
		t.Fatalf("after release: %v %v", done, err)
	}
}
