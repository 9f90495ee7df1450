package storagetest

import (
	"io"
	"runtime"
	"testing"

	"github.com/carebridge/carebridge/core/storage"
)

// transferSize and transferAlloc are the size of the object the memory
// case moves and the most a Put or a Get of it may allocate: a store's
// fixed cost per request (an SDK's, a part buffer), never the object's
// size.
const (
	transferSize  = 48 * mib
	transferAlloc = 4 * mib
)

// largeTransfersAllocateLittle puts and gets an object of transferSize
// and checks that neither allocates more than transferAlloc: the object
// streams through, it is never held.
func (s suite) largeTransfersAllocateLittle(t *testing.T) {
	st := s.setup(t)
	ctx := t.Context()
	put := allocated(func() {
		if err := st.Put(ctx, storage.ContainerUploads, "big", Pattern(7, transferSize), transferSize); err != nil {
			t.Fatal(err)
		}
	})
	get := allocated(func() {
		rc, err := st.Get(ctx, storage.ContainerUploads, "big", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		if n, err := io.Copy(io.Discard, rc); err != nil || n != transferSize {
			t.Fatalf("read %d bytes, %v; want %d", n, err, transferSize)
		}
	})
	t.Logf("%d bytes: Put allocated %d bytes, Get %d", transferSize, put, get)
	if put > transferAlloc || get > transferAlloc {
		t.Errorf("Put allocated %d bytes, Get %d, for %d bytes; want both below %d", put, get, transferSize, transferAlloc)
	}
}

// allocated is how many bytes the process allocated on the heap while f
// ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
