package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// sweepFake is an object store and entry table in memory, through the moq
// mocks.
type sweepFake struct {
	mu      sync.Mutex
	objects map[Container]map[string]time.Time
	entries map[string]bool // container/name with an entry
	store   *ObjectStoreMock
	blobs   *BlobRepoMock
}

func newSweepFake() *sweepFake {
	f := &sweepFake{objects: map[Container]map[string]time.Time{}, entries: map[string]bool{}}
	f.store = &ObjectStoreMock{
		ListFunc: func(_ context.Context, c Container, fn func(string, time.Time) error) error {
			f.mu.Lock()
			names := make([]string, 0, len(f.objects[c]))
			for n := range f.objects[c] {
				names = append(names, n)
			}
			f.mu.Unlock()
			slices.Sort(names)
			for _, n := range names {
				f.mu.Lock()
				m, ok := f.objects[c][n]
				f.mu.Unlock()
				if !ok {
					continue
				}
				if err := fn(n, m); err != nil {
					return err
				}
			}
			return nil
		},
		DeleteFunc: func(_ context.Context, c Container, name string) error {
			f.mu.Lock()
			defer f.mu.Unlock()
			delete(f.objects[c], name)
			return nil
		},
	}
	f.blobs = &BlobRepoMock{KnownFunc: func(_ context.Context, c Container, names []string) (map[string]bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		known := map[string]bool{}
		for _, n := range names {
			if f.entries[string(c)+"/"+n] {
				known[n] = true
			}
		}
		return known, nil
	}}
	return f
}

func (f *sweepFake) put(c Container, name string, modified time.Time, entry bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.objects[c] == nil {
		f.objects[c] = map[string]time.Time{}
	}
	f.objects[c][name] = modified
	f.entries[string(c)+"/"+name] = entry
}

func (f *sweepFake) has(c Container, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.objects[c][name]
	return ok
}

func TestSweepOrphans_RemovesOnlyOldObjectsWithoutAnEntry(t *testing.T) {
	f := newSweepFake()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-2*OrphanAge), now.Add(-OrphanAge/2)
	f.put(ContainerUploads, "orphan-old", old, false)
	f.put(ContainerUploads, "kept-entry", old, true)
	f.put(ContainerUploads, "young-orphan", young, false) // its upload may still be inserting the entry
	f.put(ContainerImages, "orphan-image", old, false)
	f.put(ContainerImages, "logo", old, true)
	svc := NewService(f.blobs, nil, f.store, nil, nil, 1)

	n, err := svc.SweepOrphans(context.Background(), now.Add(-OrphanAge))
	if err != nil || n != 2 {
		t.Fatalf("removed %d, %v; want 2", n, err)
	}
	for _, tt := range []struct {
		c    Container
		name string
		want bool
	}{
		{ContainerUploads, "orphan-old", false}, {ContainerUploads, "kept-entry", true}, {ContainerUploads, "young-orphan", true},
		{ContainerImages, "orphan-image", false}, {ContainerImages, "logo", true},
	} {
		if f.has(tt.c, tt.name) != tt.want {
			t.Errorf("%s/%s kept %v, want %v", tt.c, tt.name, !tt.want, tt.want)
		}
	}
}

func TestSweepOrphans_ChecksEntriesInBatchesRightBeforeDeleting(t *testing.T) {
	f := newSweepFake()
	old := time.Now().Add(-2 * OrphanAge)
	for i := range sweepBatch + 10 {
		f.put(ContainerDocuments, fmt.Sprintf("o%04d", i), old, false)
	}
	// An entry that commits while the sweep runs keeps its object: the
	// second batch's check sees it.
	late := fmt.Sprintf("o%04d", sweepBatch+5)
	known := f.blobs.KnownFunc
	f.blobs.KnownFunc = func(ctx context.Context, c Container, names []string) (map[string]bool, error) {
		f.mu.Lock()
		f.entries[string(ContainerDocuments)+"/"+late] = true
		f.mu.Unlock()
		return known(ctx, c, names)
	}
	svc := NewService(f.blobs, nil, f.store, nil, nil, 1)
	n, err := svc.SweepOrphans(context.Background(), time.Now().Add(-OrphanAge))
	if err != nil || n != sweepBatch+9 || !f.has(ContainerDocuments, late) {
		t.Fatalf("removed %d, %v; the late entry's object kept: %v", n, err, f.has(ContainerDocuments, late))
	}
	var documents int
	for _, call := range f.blobs.KnownCalls() {
		if call.C == ContainerDocuments {
			documents++
			if len(call.Names) > sweepBatch {
				t.Fatalf("a check of %d names", len(call.Names))
			}
		}
	}
	if documents != 2 {
		t.Fatalf("%d checks of documents, want 2", documents)
	}
}

func TestSweepOrphans_StopsOnAFailure(t *testing.T) {
	f := newSweepFake()
	f.put(ContainerUploads, "orphan", time.Now().Add(-2*OrphanAge), false)
	boom := errors.New("database down")
	f.blobs.KnownFunc = func(context.Context, Container, []string) (map[string]bool, error) { return nil, boom }
	svc := NewService(f.blobs, nil, f.store, nil, nil, 1)
	if _, err := svc.SweepOrphans(context.Background(), time.Now()); !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	if !f.has(ContainerUploads, "orphan") {
		t.Fatal("an object was deleted without its check")
	}
}

func TestSweepIncomplete_SweepsEveryContainerWithTheCutoffAndAddsUp(t *testing.T) {
	cutoff := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	store := &ObjectStoreMock{SweepIncompleteFunc: func(_ context.Context, c Container, got time.Time) (int, error) {
		if !got.Equal(cutoff) {
			t.Errorf("%s swept with cut-off %v, want %v", c, got, cutoff)
		}
		if c == ContainerUploads {
			return 2, nil
		}
		return 1, nil
	}}
	n, err := NewService(nil, nil, store, nil, nil, 1).SweepIncomplete(context.Background(), cutoff)
	if err != nil || n != 2+len(Containers)-1 {
		t.Fatalf("removed %d, %v; want %d", n, err, 2+len(Containers)-1)
	}
	if calls := len(store.SweepIncompleteCalls()); calls != len(Containers) {
		t.Fatalf("%d containers swept, want %d", calls, len(Containers))
	}

	boom := errors.New("store down")
	store.SweepIncompleteFunc = func(_ context.Context, c Container, _ time.Time) (int, error) {
		if c == Containers[1] {
			return 1, boom
		}
		return 1, nil
	}
	if n, err := NewService(nil, nil, store, nil, nil, 1).SweepIncomplete(context.Background(), cutoff); !errors.Is(err, boom) || n != 2 {
		t.Fatalf("removed %d, %v; want the 2 removed before the failure and the failure", n, err)
	}
}
