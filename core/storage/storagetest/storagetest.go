// Package storagetest holds the contract suite that every storage.ObjectStore
// implementation passes, in the manner of testing/fstest.TestFS.
//
// An adapter's test calls TestObjectStore with a function that returns a fresh,
// empty store for each subtest:
//
//	func TestStore_Contract(t *testing.T) {
//		storagetest.TestObjectStore(t, func(t *testing.T) storage.ObjectStore {
//			return newTestStore(t)
//		})
//	}
//
// Beyond the documented port, the suite pins down what callers rely on: a
// source with fewer or more bytes than the declared size fails with an error
// that wraps storage.ErrSizeMismatch, and a Get that starts past the end of
// an object fails with storage.ErrRangeNotSatisfiable.
package storagetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/storage"
)

// mib is one mebibyte.
const mib = 1 << 20

// LargeSize is the size of the large objects the suite streams. It spans
// more than two parts of 5 MiB, the smallest part size S3 allows, so a
// multipart adapter configured with that part size uploads three parts.
const LargeSize = 12*mib + 12345

// partSize is the part size the large-object cases are laid out around.
const partSize = 5 * mib

// TestObjectStore runs the ObjectStore contract against stores made by
// newStore, which must return a fresh store for every call; the suite
// ensures the containers it uses itself.
func TestObjectStore(t *testing.T, newStore func(t *testing.T) storage.ObjectStore) {
	t.Helper()
	s := suite{newStore: newStore}

	t.Run("EnsureContainer_IsIdempotentForEveryContainer", s.ensureContainerIsIdempotent)
	t.Run("EnsureContainer_KeepsContainersApart", s.containersAreSeparate)
	t.Run("Ping_SucceedsOnAReachableStore", s.pingSucceeds)
	t.Run("PutThenGet_ReturnsTheSameBytes", s.putThenGet)
	t.Run("PutThenGet_AcceptsNestedNames", s.nestedNames)
	t.Run("Get_ReadsByteRanges", s.getRanges)
	t.Run("Get_PastTheEndIsNotSatisfiable", s.getPastTheEnd)
	t.Run("Put_StoresAnEmptyObject", s.emptyObject)
	t.Run("Put_StreamsALargeObjectFromANonSeekableReader", s.largeObject)
	t.Run("PutAndGet_OfALargeObjectAllocateLittle", s.largeTransfersAllocateLittle)
	t.Run("Put_FailsAndStoresNothingWhenTheReaderIsShort", s.shortReader)
	t.Run("Put_FailsAndStoresNothingWhenTheReaderIsLong", s.longReader)
	t.Run("Put_WrapsTheReaderErrorAndStoresNothing", s.failingReader)
	t.Run("Put_StoresNothingWhenTheContextIsCancelled", s.cancelledPut)
	t.Run("Put_HandlesConcurrentUploads", s.concurrentPuts)
	t.Run("Get_MissingObjectIsObjectNotFound", s.getMissing)
	t.Run("Delete_RemovesTheObject", s.deleteRemoves)
	t.Run("Delete_MissingObjectIsNotAnError", s.deleteMissing)
	t.Run("List_NamesEveryObjectWithItsTime", s.listObjects)
	t.Run("SweepIncomplete_LeavesFinishedObjectsAlone", s.sweepIncompleteKeepsObjects)
}

type suite struct {
	newStore func(t *testing.T) storage.ObjectStore
}

// setup returns a fresh store with the uploads container ensured.
func (s suite) setup(t *testing.T) storage.ObjectStore {
	t.Helper()
	st := s.newStore(t)
	if err := st.EnsureContainer(t.Context(), storage.ContainerUploads); err != nil {
		t.Fatalf("EnsureContainer(%s): %v", storage.ContainerUploads, err)
	}
	return st
}

func (s suite) ensureContainerIsIdempotent(t *testing.T) {
	ctx := t.Context()
	st := s.newStore(t)
	for range 2 {
		for _, c := range storage.Containers {
			if err := st.EnsureContainer(ctx, c); err != nil {
				t.Fatalf("EnsureContainer(%s): %v", c, err)
			}
		}
	}
	for _, c := range storage.Containers {
		name := freshName(t)
		data := []byte("in " + string(c))
		mustPut(t, st, c, name, data)
		if got := mustGet(t, st, c, name, 0, -1); !bytes.Equal(got, data) {
			t.Errorf("Get(%s/%s) = %q, want %q", c, name, got, data)
		}
	}
}

func (s suite) containersAreSeparate(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	if err := st.EnsureContainer(ctx, storage.ContainerImages); err != nil {
		t.Fatalf("EnsureContainer(%s): %v", storage.ContainerImages, err)
	}
	name := freshName(t)
	mustPut(t, st, storage.ContainerUploads, name, []byte("only in uploads"))
	assertMissing(t, st, storage.ContainerImages, name)
	// Deleting in the other container leaves the object alone.
	if err := st.Delete(ctx, storage.ContainerImages, name); err != nil {
		t.Fatalf("Delete(%s/%s): %v", storage.ContainerImages, name, err)
	}
	if got := mustGet(t, st, storage.ContainerUploads, name, 0, -1); string(got) != "only in uploads" {
		t.Errorf("Get after Delete in another container = %q", got)
	}
}

func (s suite) pingSucceeds(t *testing.T) {
	st := s.setup(t)
	if err := st.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func (s suite) putThenGet(t *testing.T) {
	st := s.setup(t)
	name := freshName(t)
	data := []byte("hello, carebridge\x00\xff")
	mustPut(t, st, storage.ContainerUploads, name, data)
	if got := mustGet(t, st, storage.ContainerUploads, name, 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, want %q", got, data)
	}
}

func (s suite) nestedNames(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	name := "2026/11/22/" + freshName(t) + ".bin"
	data := []byte("nested")
	mustPut(t, st, storage.ContainerUploads, name, data)
	if got := mustGet(t, st, storage.ContainerUploads, name, 0, -1); !bytes.Equal(got, data) {
		t.Fatalf("Get = %q, want %q", got, data)
	}
	if err := st.Delete(ctx, storage.ContainerUploads, name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertMissing(t, st, storage.ContainerUploads, name)
}

func (s suite) getRanges(t *testing.T) {
	st := s.setup(t)
	const size = 1000
	data := mustReadAll(t, Pattern(1, size))
	name := freshName(t)
	mustPut(t, st, storage.ContainerUploads, name, data)

	tests := []struct {
		name           string
		offset, length int64
		want           []byte
	}{
		{"Start", 0, 10, data[:10]},
		{"Middle", 400, 100, data[400:500]},
		{"End", 990, 10, data[990:]},
		{"Whole", 0, size, data},
		{"NegativeLengthReadsToTheEnd", 500, -1, data[500:]},
		{"NegativeLengthFromZeroReadsAll", 0, -1, data},
		{"LengthPastTheEndStopsAtTheEnd", 995, 100, data[995:]},
		{"ZeroLengthIsEmpty", 10, 0, nil},
		{"LastByte", size - 1, 1, data[size-1:]},
		{"OffsetAtTheEndIsEmpty", size, -1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustGet(t, st, storage.ContainerUploads, name, tt.offset, tt.length)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("Get(%d, %d) = %d bytes, want %d bytes (equal prefix %d)",
					tt.offset, tt.length, len(got), len(tt.want), commonPrefix(got, tt.want))
			}
		})
	}
}

func (s suite) getPastTheEnd(t *testing.T) {
	st := s.setup(t)
	name := freshName(t)
	mustPut(t, st, storage.ContainerUploads, name, []byte("0123456789"))
	for _, length := range []int64{-1, 1, 5} {
		rc, err := st.Get(t.Context(), storage.ContainerUploads, name, 11, length)
		if err == nil {
			rc.Close()
			t.Fatalf("Get(11, %d) on 10 bytes: no error", length)
		}
		if !errors.Is(err, storage.ErrRangeNotSatisfiable) {
			t.Errorf("Get(11, %d) on 10 bytes = %v, want ErrRangeNotSatisfiable", length, err)
		}
	}
}

func (s suite) emptyObject(t *testing.T) {
	st := s.setup(t)
	name := freshName(t)
	mustPut(t, st, storage.ContainerUploads, name, nil)
	for _, length := range []int64{-1, 0, 5} {
		if got := mustGet(t, st, storage.ContainerUploads, name, 0, length); len(got) != 0 {
			t.Errorf("Get(0, %d) of an empty object = %q", length, got)
		}
	}
}

func (s suite) largeObject(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	name := freshName(t)
	const seed = 42
	if err := st.Put(ctx, storage.ContainerUploads, name, Pattern(seed, LargeSize), LargeSize); err != nil {
		t.Fatalf("Put(%d bytes): %v", LargeSize, err)
	}

	t.Run("Whole", func(t *testing.T) {
		rc, err := st.Get(ctx, storage.ContainerUploads, name, 0, -1)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		defer rc.Close()
		n, sum := digest(t, rc)
		wantN, want := digest(t, Pattern(seed, LargeSize))
		if n != wantN || sum != want {
			t.Fatalf("Get = %d bytes sha256 %x, want %d bytes sha256 %x", n, sum, wantN, want)
		}
	})

	ranges := []struct {
		name           string
		offset, length int64
	}{
		{"AcrossTheFirstPartBoundary", partSize - 100, 200},
		{"AcrossTheSecondPartBoundary", 2*partSize - 1, 2},
		{"Tail", LargeSize - 1000, -1},
		{"Middle", 3*mib + 7, mib},
	}
	for _, r := range ranges {
		t.Run(r.name, func(t *testing.T) {
			got := mustGet(t, st, storage.ContainerUploads, name, r.offset, r.length)
			want := patternRange(t, seed, LargeSize, r.offset, r.length)
			if !bytes.Equal(got, want) {
				t.Fatalf("Get(%d, %d) = %d bytes, want %d (equal prefix %d)",
					r.offset, r.length, len(got), len(want), commonPrefix(got, want))
			}
		})
	}
}

func (s suite) getMissing(t *testing.T) {
	st := s.setup(t)
	name := freshName(t)
	for _, r := range [][2]int64{{0, -1}, {0, 10}, {5, -1}, {0, 0}} {
		rc, err := st.Get(t.Context(), storage.ContainerUploads, name, r[0], r[1])
		if err == nil {
			rc.Close()
			t.Fatalf("Get(%d, %d) of a missing object: no error", r[0], r[1])
		}
		if !errors.Is(err, storage.ErrObjectNotFound) {
			t.Errorf("Get(%d, %d) of a missing object = %v, want ErrObjectNotFound", r[0], r[1], err)
		}
	}
	// A container that was never ensured holds nothing either.
	assertMissing(t, st, storage.ContainerArchived, name)
}

func (s suite) deleteRemoves(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	name := freshName(t)
	mustPut(t, st, storage.ContainerUploads, name, []byte("to be deleted"))
	if err := st.Delete(ctx, storage.ContainerUploads, name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertMissing(t, st, storage.ContainerUploads, name)
	if err := st.Delete(ctx, storage.ContainerUploads, name); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func (s suite) deleteMissing(t *testing.T) {
	st := s.setup(t)
	if err := st.Delete(t.Context(), storage.ContainerUploads, freshName(t)); err != nil {
		t.Fatalf("Delete of a missing object: %v", err)
	}
	if err := st.Delete(t.Context(), storage.ContainerUploads, "never/"+freshName(t)); err != nil {
		t.Fatalf("Delete of a missing nested object: %v", err)
	}
}

// sweepIncompleteKeepsObjects sweeps with a cut-off in the future, which
// takes every unfinished write there is, and finds the finished objects,
// large ones too, untouched; a container never ensured has nothing to sweep.
func (s suite) sweepIncompleteKeepsObjects(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	small, large := freshName(t), "nested/"+freshName(t)
	mustPut(t, st, storage.ContainerUploads, small, []byte("finished"))
	if err := st.Put(ctx, storage.ContainerUploads, large, Pattern(7, LargeSize), LargeSize); err != nil {
		t.Fatalf("Put(large): %v", err)
	}
	for range 2 { // a second sweep finds nothing new
		if _, err := st.SweepIncomplete(ctx, storage.ContainerUploads, time.Now().Add(time.Hour)); err != nil {
			t.Fatalf("SweepIncomplete: %v", err)
		}
	}
	if got := mustGet(t, st, storage.ContainerUploads, small, 0, -1); string(got) != "finished" {
		t.Errorf("small object after the sweep: %q", got)
	}
	if got := mustGet(t, st, storage.ContainerUploads, large, 0, -1); !bytes.Equal(got, mustReadAll(t, Pattern(7, LargeSize))) {
		t.Errorf("large object after the sweep differs")
	}
	if n, err := st.SweepIncomplete(ctx, storage.ContainerArchived, time.Now().Add(time.Hour)); n != 0 || err != nil {
		t.Errorf("SweepIncomplete of a container never ensured = %d, %v; want 0, nil", n, err)
	}
}

// freshName returns a new object name, unique across runs.
func freshName(t *testing.T) string {
	t.Helper()
	return "st-" + strings.ToLower(rand.Text())
}

func mustPut(t *testing.T, st storage.ObjectStore, c storage.Container, name string, data []byte) {
	t.Helper()
	// A non-seekable reader, so no implementation can rely on seeking.
	r := io.MultiReader(bytes.NewReader(data))
	if err := st.Put(t.Context(), c, name, r, int64(len(data))); err != nil {
		t.Fatalf("Put(%s/%s, %d bytes): %v", c, name, len(data), err)
	}
}

func mustGet(t *testing.T, st storage.ObjectStore, c storage.Container, name string, offset, length int64) []byte {
	t.Helper()
	rc, err := st.Get(t.Context(), c, name, offset, length)
	if err != nil {
		t.Fatalf("Get(%s/%s, %d, %d): %v", c, name, offset, length, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s/%s: %v", c, name, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("close %s/%s: %v", c, name, err)
	}
	return data
}

// assertMissing checks that name does not exist in c. It uses a context of
// its own, so it also works after the test's context was cancelled.
func assertMissing(t *testing.T, st storage.ObjectStore, c storage.Container, name string) {
	t.Helper()
	rc, err := st.Get(context.WithoutCancel(t.Context()), c, name, 0, -1)
	if err == nil {
		n, _ := io.Copy(io.Discard, rc)
		rc.Close()
		t.Fatalf("%s/%s exists (%d bytes), want it absent", c, name, n)
	}
	if !errors.Is(err, storage.ErrObjectNotFound) {
		t.Fatalf("Get(%s/%s) = %v, want ErrObjectNotFound", c, name, err)
	}
}

func mustReadAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// digest streams r into SHA-256.
func digest(t *testing.T, r io.Reader) (int64, [sha256.Size]byte) {
	t.Helper()
	h := sha256.New()
	n, err := io.Copy(h, r)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return n, [sha256.Size]byte(h.Sum(nil))
}

func (s suite) listObjects(t *testing.T) {
	ctx := t.Context()
	st := s.setup(t)
	before := time.Now().Add(-time.Minute) // stores keep times to the second
	names := []string{freshName(t), freshName(t), "nested/" + freshName(t)}
	for _, n := range names {
		mustPut(t, st, storage.ContainerUploads, n, []byte("listed"))
	}
	gone := freshName(t)
	mustPut(t, st, storage.ContainerUploads, gone, []byte("deleted"))
	if err := st.Delete(ctx, storage.ContainerUploads, gone); err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Minute)
	seen := map[string]time.Time{}
	if err := st.List(ctx, storage.ContainerUploads, func(name string, modified time.Time) error {
		if _, dup := seen[name]; dup {
			t.Errorf("%s listed twice", name)
		}
		seen[name] = modified
		return nil
	}); err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, n := range names {
		m, ok := seen[n]
		if !ok {
			t.Errorf("%s not listed (got %d names)", n, len(seen))
		} else if m.Before(before) || m.After(after) {
			t.Errorf("%s modified %v, want between %v and %v", n, m, before, after)
		}
	}
	if _, ok := seen[gone]; ok {
		t.Errorf("deleted %s listed", gone)
	}
	for n := range seen {
		if strings.Contains(n, ".tmp") || strings.HasPrefix(path.Base(n), ".") {
			t.Errorf("a temporary file is listed: %s", n)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := st.List(ctx, storage.ContainerUploads, func(string, time.Time) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("List with a failing fn: %v after %d calls", err, calls)
	}
}
