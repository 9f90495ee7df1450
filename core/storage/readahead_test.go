package storage

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

type closeRecorder struct{ closed bool }

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestReadAhead_YieldsTheSourceThenItsError(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789"), 100_000)
	for _, size := range []int{7, 4096, 1 << 20} {
		c := &closeRecorder{}
		ra := newReadAhead(iotest.HalfReader(bytes.NewReader(src)), c, 3, size)
		got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(ra, 5000)))
		if err != nil || !bytes.Equal(got, src[:5000]) {
			t.Fatalf("size %d: %d bytes, %v", size, len(got), err)
		}
		rest, err := io.ReadAll(ra)
		if err != nil || !bytes.Equal(rest, src[5000:]) {
			t.Fatalf("size %d: rest %d bytes, %v", size, len(rest), err)
		}
		if err := ra.Close(); err != nil || !c.closed {
			t.Fatalf("close: %v, closed %v", err, c.closed)
		}
	}

	boom := errors.New("segment corrupt")
	ra := newReadAhead(io.MultiReader(bytes.NewReader(src[:300]), iotest.ErrReader(boom)), &closeRecorder{}, 2, 128)
	got, err := io.ReadAll(ra)
	if !errors.Is(err, boom) || !bytes.Equal(got, src[:300]) {
		t.Fatalf("got %d bytes, %v; want the 300 good bytes, then the error", len(got), err)
	}
}

// blockingReader blocks until closed, as a network body does.
type blockingReader struct{ unblock chan struct{} }

func (b *blockingReader) Read([]byte) (int, error) { <-b.unblock; return 0, io.ErrClosedPipe }
func (b *blockingReader) Close() error             { close(b.unblock); return nil }

func TestReadAhead_CloseStopsTheGoroutineMidStream(t *testing.T) {
	b := &blockingReader{unblock: make(chan struct{})}
	ra := newReadAhead(b, b, 2, 64)
	if err := ra.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ra.exited:
	default:
		t.Fatal("the read-ahead goroutine outlived Close")
	}
	if err := ra.Close(); err != nil {
		t.Fatal("second close:", err)
	}
}
