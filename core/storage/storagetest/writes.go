package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/carebridge/carebridge/core/storage"
)

func (s suite) shortReader(t *testing.T) {
	st := s.setup(t)
	tests := []struct {
		name        string
		size, given int64
	}{
		{"Small", 200, 100},
		{"Empty", 200, 0},
		{"OneByteShort", 200, 199},
		{"LargeInTheMiddleOfAPart", LargeSize, 7 * mib},
		{"LargeAtAPartBoundary", LargeSize, 2 * partSize},
		{"LargeOneByteShort", LargeSize, LargeSize - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := freshName(t)
			err := st.Put(t.Context(), storage.ContainerUploads, name, Pattern(3, tt.given), tt.size)
			if err == nil {
				t.Fatalf("Put(size %d) of %d bytes: no error", tt.size, tt.given)
			}
			if !errors.Is(err, storage.ErrSizeMismatch) {
				t.Errorf("Put(size %d) of %d bytes = %v, want an error wrapping ErrSizeMismatch", tt.size, tt.given, err)
			}
			assertMissing(t, st, storage.ContainerUploads, name)
		})
	}
}

func (s suite) longReader(t *testing.T) {
	st := s.setup(t)
	tests := []struct {
		name string
		size int64
		r    io.Reader
	}{
		{"Small", 200, Pattern(4, 300)},
		{"OneByteLong", 200, Pattern(4, 201)},
		{"EmptyObject", 0, strings.NewReader("x")},
		{"EndlessReader", 1000, Pattern(4, -1)},
		{"LargeOneByteLong", LargeSize, Pattern(4, LargeSize+1)},
		{"LargeEndlessReader", LargeSize, Pattern(4, -1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := freshName(t)
			err := st.Put(t.Context(), storage.ContainerUploads, name, tt.r, tt.size)
			if err == nil {
				t.Fatalf("Put(size %d) of a longer source: no error", tt.size)
			}
			if !errors.Is(err, storage.ErrSizeMismatch) {
				t.Errorf("Put(size %d) of a longer source = %v, want an error wrapping ErrSizeMismatch", tt.size, err)
			}
			assertMissing(t, st, storage.ContainerUploads, name)
		})
	}
}

func (s suite) failingReader(t *testing.T) {
	st := s.setup(t)
	tests := []struct {
		name        string
		size, after int64
	}{
		{"AtTheStart", 200, 0},
		{"Midway", 200, 100},
		{"AfterTheLastByte", 200, 200},
		{"LargeMidway", LargeSize, 7 * mib},
		{"LargeAtAPartBoundary", LargeSize, partSize},
		{"LargeAfterTheLastByte", LargeSize, LargeSize},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errBoom := fmt.Errorf("boom after %d bytes", tt.after)
			name := freshName(t)
			r := &FailingReader{R: Pattern(5, tt.after), Err: errBoom}
			err := st.Put(t.Context(), storage.ContainerUploads, name, r, tt.size)
			if err == nil {
				t.Fatalf("Put with a failing reader: no error")
			}
			if !errors.Is(err, errBoom) {
				t.Errorf("Put with a failing reader = %v, want an error wrapping %v", err, errBoom)
			}
			assertMissing(t, st, storage.ContainerUploads, name)
		})
	}
}

func (s suite) cancelledPut(t *testing.T) {
	st := s.setup(t)
	tests := []struct {
		name        string
		size, after int64
	}{
		{"BeforeTheCall", 200, -1},
		{"Midway", 4 * mib, mib},
		{"LargeInALaterPart", LargeSize, 7 * mib},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			name := freshName(t)
			var r io.Reader = Pattern(6, tt.size)
			if tt.after < 0 {
				cancel()
			} else {
				r = &cancellingReader{r: r, after: tt.after, cancel: cancel}
			}
			err := st.Put(ctx, storage.ContainerUploads, name, r, tt.size)
			if err == nil {
				t.Fatalf("Put with a cancelled context: no error")
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Put with a cancelled context = %v, want an error wrapping context.Canceled", err)
			}
			assertMissing(t, st, storage.ContainerUploads, name)
		})
	}
}

func (s suite) concurrentPuts(t *testing.T) {
	st := s.setup(t)
	const workers = 4
	names := make([]string, workers)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for i := range workers {
		names[i] = freshName(t)
		wg.Go(func() {
			errs[i] = st.Put(t.Context(), storage.ContainerUploads, names[i], Pattern(uint64(100+i), 64*1024), 64*1024)
		})
	}
	wg.Wait()
	for i := range workers {
		if errs[i] != nil {
			t.Fatalf("Put #%d: %v", i, errs[i])
		}
		got := mustGet(t, st, storage.ContainerUploads, names[i], 0, -1)
		if want := mustReadAll(t, Pattern(uint64(100+i), 64*1024)); !bytes.Equal(got, want) {
			t.Errorf("object #%d differs (equal prefix %d of %d)", i, commonPrefix(got, want), len(want))
		}
	}
}

// FailingReader yields what R yields and then, instead of io.EOF, Err.
type FailingReader struct {
	R   io.Reader
	Err error
}

func (f *FailingReader) Read(p []byte) (int, error) {
	n, err := f.R.Read(p)
	if err == io.EOF {
		err = f.Err
	}
	return n, err
}

// cancellingReader calls cancel once it has yielded after bytes and keeps
// yielding what r yields.
type cancellingReader struct {
	r      io.Reader
	after  int64
	n      int64
	cancel context.CancelFunc
}

func (c *cancellingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n >= c.after {
		c.cancel()
	}
	return n, err
}
