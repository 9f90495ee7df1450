package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

// Instances that start at once on an empty database all end up with the
// one key the first of them stored.
func TestIntegrationServiceKey_InstancesStartingAtOnceShareOneKey(t *testing.T) {
	url := pgtest.New(t)
	const instances = 8
	keys := make([][]byte, instances)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range instances {
		db, err := postgres.New(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			k, err := db.ServiceKey(context.Background())
			if err != nil {
				t.Error(err)
			}
			keys[i] = k
		}()
	}
	close(start)
	wg.Wait()
	for i, k := range keys {
		if len(k) != 32 || !slices.Equal(k, keys[0]) {
			t.Fatalf("instance %d got a %d-byte key %x, instance 0 %x", i, len(k), k, keys[0])
		}
	}
	db := pgtest.Store(t)
	other, err := db.ServiceKey(context.Background())
	if err != nil || slices.Equal(other, keys[0]) {
		t.Fatalf("another database has the same key (%v)", err)
	}
}

// A key claimed with a fingerprint under an older service key replays when
// that fingerprint is among those of the repeat; a new key stores the
// first fingerprint.
func TestIntegrationIdempotency_ClaimMatchesAFingerprintUnderAnyKey(t *testing.T) {
	ctx := context.Background()
	idem := pgtest.Store(t).Idempotency()
	if _, done, err := idem.Claim(ctx, "ana", "k1", []string{"fp-old"}); err != nil || done {
		t.Fatalf("claim: %v %v", done, err)
	}
	if err := idem.Complete(ctx, "ana", "k1", ehr.Outcome{Status: "booked"}); err != nil {
		t.Fatal(err)
	}
	out, done, err := idem.Claim(ctx, "ana", "k1", []string{"fp-new", "fp-old"})
	if err != nil || !done || out != (ehr.Outcome{Status: "booked"}) {
		t.Fatalf("repeat after the rotation: %+v %v %v", out, done, err)
	}
	if _, _, err := idem.Claim(ctx, "ana", "k1", []string{"fp-new"}); !errors.Is(err, ehr.ErrIdempotencyKeyReused) {
		t.Fatalf("repeat once the older key is gone: %v", err)
	}
	if _, done, err := idem.Claim(ctx, "ana", "k2", []string{"fp-new", "fp-old"}); err != nil || done {
		t.Fatalf("a new key: %v %v", done, err)
	}
	if _, _, err := idem.Claim(ctx, "ana", "k2", []string{"fp-old"}); !errors.Is(err, ehr.ErrIdempotencyKeyReused) {
		t.Fatalf("a new key stored the older fingerprint: %v", err)
	}
	if _, _, err := idem.Claim(ctx, "ana", "k3", nil); err == nil {
		t.Fatal("a claim without a fingerprint succeeded")
	}
}

func TestIntegrationWebhooks_ResealReplacesEverySecretItCan(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	a, b := subscribe(t, db, "", "location.created"), subscribe(t, db, "", "business.updated")
	n, failed, err := db.Webhooks().Reseal(ctx, func(id string, sealed []byte) ([]byte, error) {
		if id == b.ID {
			return nil, errors.New("cannot open")
		}
		return append([]byte("again-"), sealed...), nil
	})
	if err != nil || n != 1 || !slices.Equal(failed, []string{b.ID}) {
		t.Fatalf("Reseal = %d, %v, %v; want 1 and %s failed", n, failed, err, b.ID)
	}
	got := map[string]string{}
	if _, _, err := db.Webhooks().Reseal(ctx, func(id string, sealed []byte) ([]byte, error) {
		got[id] = string(sealed)
		return sealed, nil
	}); err != nil {
		t.Fatal(err)
	}
	if got[a.ID] != "again-"+string(a.Secret) || got[b.ID] != string(b.Secret) {
		t.Fatalf("secrets after the reseal: %q", got)
	}
}
