package storage

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"
	"testing/synctest"

	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

type closeRecorder struct{ closed bool }

// failingWriter takes after bytes, then fails with err.
type failingWriter struct {
	got   []byte
	after int
	err   error
}

func (w *failingWriter) Write(p []byte) (int, error) {
	n := min(len(p), w.after-len(w.got))
	w.got = append(w.got, p[:n]...)
	if n < len(p) {
		return n, w.err
	}
	return n, nil
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// wantAllBack fails unless the pool has every buffer back.
func wantAllBack(t *testing.T, p *ReadAheadPool) {
	t.Helper()
	if s := p.Stats(); s.Lent != 0 {
		t.Fatalf("%d buffers still lent: %+v", s.Lent, s)
	}
}

func TestReadAhead_YieldsTheSourceThenItsError(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789"), 100_000)
	for _, size := range []int{7, 4096, 1 << 20} {
		c := &closeRecorder{}
		pool := newReadAheadPool(int64(3*size), size)
		ra := newReadAhead(iotest.HalfReader(bytes.NewReader(src)), c, pool, 3)
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
		wantAllBack(t, pool)
	}

	boom := errors.New("segment corrupt")
	pool := newReadAheadPool(2*128, 128)
	ra := newReadAhead(io.MultiReader(bytes.NewReader(src[:300]), iotest.ErrReader(boom)), &closeRecorder{}, pool, 2)
	got, err := io.ReadAll(ra)
	if !errors.Is(err, boom) || !bytes.Equal(got, src[:300]) {
		t.Fatalf("got %d bytes, %v; want the 300 good bytes, then the error", len(got), err)
	}
	ra.Close()
	wantAllBack(t, pool)
}

// blockingReader blocks until closed, as a network body does.
type blockingReader struct{ unblock chan struct{} }

func (b *blockingReader) Read([]byte) (int, error) { <-b.unblock; return 0, io.ErrClosedPipe }
func (b *blockingReader) Close() error             { close(b.unblock); return nil }

func TestReadAhead_CloseStopsTheGoroutineMidStream(t *testing.T) {
	b := &blockingReader{unblock: make(chan struct{})}
	pool := newReadAheadPool(2*64, 64)
	ra := newReadAhead(b, b, pool, 2).(*readAhead)
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
	wantAllBack(t, pool)
	if _, err := ra.Read(make([]byte, 1)); err == nil {
		t.Fatal("a read after Close succeeded")
	}
}

func TestReadAhead_AnExhaustedPoolMeansNoReadAheadNotMoreMemory(t *testing.T) {
	src := bytes.Repeat([]byte("abc"), 1000)
	pool := newReadAheadPool(3*64, 64) // 3 buffers
	first := newReadAhead(bytes.NewReader(src), &closeRecorder{}, pool, 2)
	second := newReadAhead(bytes.NewReader(src), &closeRecorder{}, pool, 2) // gets the last one
	third := newReadAhead(bytes.NewReader(src), &closeRecorder{}, pool, 2)  // gets none
	if _, ok := third.(*readAhead); ok {
		t.Fatal("a download without buffers still reads ahead")
	}
	if s := pool.Stats(); s.Lent != 3 || s.Peak != 3 || s.Short != 2 || s.Starved != 1 {
		t.Fatalf("stats %+v; want 3 lent, one short download, one starved", s)
	}
	for i, r := range []io.ReadCloser{first, second, third} {
		if got, err := io.ReadAll(r); err != nil || !bytes.Equal(got, src) {
			t.Fatalf("reader %d: %d bytes, %v", i, len(got), err)
		}
		r.Close()
	}
	wantAllBack(t, pool)
	if s := pool.Stats(); s.Returned != 3 {
		t.Fatalf("stats %+v; want 3 returned", s)
	}
}

func TestReadAheadPool_OffLendsNothing(t *testing.T) {
	pool := NewReadAheadPool(0)
	r := newReadAhead(bytes.NewReader([]byte("x")), &closeRecorder{}, pool, 4)
	if _, ok := r.(*readAhead); ok || pool.Stats().Max != 0 {
		t.Fatalf("a pool of 0 bytes lent buffers: %+v", pool.Stats())
	}
}

// encryptedFixture is a fixture whose downloads borrow from pool, with one
// encrypted file of several read-ahead buffers uploaded.
func encryptedFixture(t *testing.T, pool *ReadAheadPool) (*fixture, Blob, []byte) {
	t.Helper()
	f := newFixture(t)
	f.svc.readAhead = pool
	f.svc.maxUpload = 8 << 20
	plain := make([]byte, 5*readAheadSize/2+123) // 2.5 buffers and a bit
	rand.Read(plain)
	plain = append([]byte("\x89PNG\r\n\x1a\n"), plain...)
	b, err := f.svc.Upload(as("alice"), UploadInput{OriginalFilename: "scan.png", ContentType: "image/png",
		FileSize: int64(len(plain)), Encrypted: true, Body: bytes.NewReader(plain)})
	if err != nil {
		t.Fatal(err)
	}
	return f, b, plain
}

func TestDownload_ConcurrentDownloadsStayWithinTheReadAheadBound(t *testing.T) {
	pool := NewReadAheadPool(6 * readAheadSize) // six buffers: one download and a half at full depth
	f, b, plain := encryptedFixture(t, pool)

	const n = 8
	downloads := make([]*Download, n)
	for i := range downloads {
		d, err := f.svc.Download(as("alice"), b.ID, nil)
		if err != nil {
			t.Fatal(err)
		}
		downloads[i] = d
	}
	if s := pool.Stats(); s.Lent != 6 || s.Starved != n-2 {
		t.Fatalf("with %d downloads open: %+v; want all 6 buffers lent, %d downloads without read-ahead", n, s, n-2)
	}
	got := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, d := range downloads {
		wg.Go(func() {
			defer d.Body.Close()
			got[i], errs[i] = io.ReadAll(d.Body)
		})
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || !bytes.Equal(got[i], plain) {
			t.Fatalf("download %d: %d bytes, %v", i, len(got[i]), errs[i])
		}
	}
	if s := pool.Stats(); s.Peak > s.Max || s.Max != 6 {
		t.Fatalf("stats %+v: lent more than the bound", s)
	}
	wantAllBack(t, pool)

	// Buffers back, the next download reads ahead at full depth again.
	d, err := f.svc.Download(as("alice"), b.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := pool.Stats(); s.Lent != readAheadDepth {
		t.Fatalf("after the others: %+v, want %d lent", s, readAheadDepth)
	}
	readAll(t, d)
	wantAllBack(t, pool)
}

// Every way a download ends gives its buffers back, and its goroutine
// ends: synctest fails the test if one is left blocked.
func TestDownload_ReadAheadBuffersComeBackHoweverTheDownloadEnds(t *testing.T) {
	ends := []struct {
		name string
		run  func(t *testing.T, f *fixture, b Blob, plain []byte)
	}{
		{"read to the end", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, d); !bytes.Equal(got, plain) {
				t.Fatal("download differs from upload")
			}
		}},
		{"written out to the end", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			if _, ok := d.Body.(io.WriterTo); !ok {
				t.Fatal("the body of a download that reads ahead does not write itself out")
			}
			var got bytes.Buffer
			if n, err := io.Copy(&got, d.Body); err != nil || n != int64(len(plain)) || !bytes.Equal(got.Bytes(), plain) {
				t.Fatalf("wrote %d bytes, %v; want the %d bytes uploaded", n, err, len(plain))
			}
		}},
		{"written out to a client that goes away", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			gone := errors.New("client gone")
			w := &failingWriter{after: readAheadSize + 5, err: gone}
			if _, err := io.Copy(w, d.Body); !errors.Is(err, gone) || !bytes.Equal(w.got, plain[:len(w.got)]) {
				t.Fatalf("got %v after %d bytes, want the writer's error after authentic bytes", err, len(w.got))
			}
		}},
		{"client gone after a few bytes", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(d.Body, make([]byte, 100)); err != nil {
				t.Fatal(err)
			}
			synctest.Wait() // the read-ahead has filled every buffer
			d.Body.Close()
		}},
		{"client gone before the first byte", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			d.Body.Close()
		}},
		{"a range", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			r := ByteRange{Start: readAheadSize - 7, End: 2 * readAheadSize}
			d, err := f.svc.Download(as("alice"), b.ID, &r)
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, d); !bytes.Equal(got, plain[r.Start:r.End+1]) {
				t.Fatal("range differs from upload")
			}
		}},
		{"a corrupt segment mid-file", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			f.data["uploads/"+b.Name][2*readAheadSize] ^= 1
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			if _, err := io.ReadAll(d.Body); !errors.Is(err, ErrBlobCorrupt) {
				t.Fatalf("got %v, want ErrBlobCorrupt", err)
			}
		}},
		{"a corrupt segment mid-file, written out", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			f.data["uploads/"+b.Name][2*readAheadSize] ^= 1
			d, err := f.svc.Download(as("alice"), b.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Body.Close()
			var got bytes.Buffer
			n, err := io.Copy(&got, d.Body)
			if !errors.Is(err, ErrBlobCorrupt) || n%segcrypt.SegmentSize != 0 || !bytes.Equal(got.Bytes(), plain[:n]) {
				t.Fatalf("wrote %d bytes, %v; want whole authentic segments, then ErrBlobCorrupt", n, err)
			}
		}},
		{"a corrupt first segment", func(t *testing.T, f *fixture, b Blob, plain []byte) {
			f.data["uploads/"+b.Name][segcrypt.SegmentSize/2] ^= 1
			if _, err := f.svc.Download(as("alice"), b.ID, nil); !errors.Is(err, ErrBlobCorrupt) {
				t.Fatalf("got %v, want ErrBlobCorrupt", err)
			}
		}},
	}
	for _, end := range ends {
		t.Run(end.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pool := NewReadAheadPool(DefaultReadAheadBytes)
				f, b, plain := encryptedFixture(t, pool)
				end.run(t, f, b, plain)
				if s := pool.Stats(); s.Peak != readAheadDepth {
					t.Errorf("stats %+v: the download did not read ahead", s)
				}
				wantAllBack(t, pool)
			})
		})
	}
}
