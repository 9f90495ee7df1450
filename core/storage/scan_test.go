package storage

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core"
)

// fakeScan is a scan that keeps what it was sent and answers signature
// (or the failures set on it).
type fakeScan struct {
	mu        sync.Mutex
	got       bytes.Buffer
	signature string
	writeErr  error // returned once failAfter bytes were taken
	failAfter int
	verdict   error
	closed    int
}

func (s *fakeScan) mock() *ScanMock {
	return &ScanMock{
		WriteFunc: func(p []byte) (int, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.writeErr != nil && s.got.Len()+len(p) > s.failAfter {
				return 0, s.writeErr
			}
			return s.got.Write(p)
		},
		VerdictFunc: func() (string, error) { return s.signature, s.verdict },
		CloseFunc: func() error {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.closed++
			return nil
		},
	}
}

// withScanner rebuilds f's service with a scanner that starts scan (or
// fails with startErr).
func (f *fixture) withScanner(scan *fakeScan, startErr error) *ScannerMock {
	sc := &ScannerMock{ScanFunc: func(ctx context.Context) (Scan, error) {
		if startErr != nil {
			return nil, startErr
		}
		return scan.mock(), nil
	}}
	f.svc = NewService(f.blobs, f.tx, f.objects, f.keys, f.svc.members, f.svc.maxUpload, WithScanner(sc))
	return sc
}

// assertNothingKept fails when an object, a row or an event stayed.
func (f *fixture) assertNothingKept(t *testing.T) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.data) != 0 || len(f.rows) != 0 || len(f.events) != 0 {
		t.Fatalf("kept %d objects, %d rows, %d events; want none", len(f.data), len(f.rows), len(f.events))
	}
}

func TestUpload_ScannerSeesThePlaintextOnce(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		f := newFixture(t)
		scan := &fakeScan{}
		f.withScanner(scan, nil)
		in := pngUpload(pngBytes)
		in.Encrypted = encrypted
		b, err := f.svc.Upload(as("alice"), in)
		if err != nil {
			t.Fatalf("encrypted=%v: %v", encrypted, err)
		}
		if !bytes.Equal(scan.got.Bytes(), pngBytes) {
			t.Fatalf("encrypted=%v: the scanner got %d bytes, want the %d plaintext bytes", encrypted, scan.got.Len(), len(pngBytes))
		}
		if _, ok := f.rows[b.ID]; !ok || len(f.data) != 1 || scan.closed == 0 {
			t.Fatalf("encrypted=%v: rows %d, objects %d, scan closed %d times", encrypted, len(f.rows), len(f.data), scan.closed)
		}
	}
}

func TestUpload_DetectionRefusesAndKeepsNothing(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		f := newFixture(t)
		scan := &fakeScan{signature: "Eicar-Signature.UNOFFICIAL"}
		f.withScanner(scan, nil)
		in := pngUpload(pngBytes)
		in.Encrypted = encrypted
		_, err := f.svc.Upload(as("alice"), in)
		var e *core.Error
		if !errors.As(err, &e) || e.Code != "malware_detected" || e.Kind != core.KindUnprocessable {
			t.Fatalf("encrypted=%v: err %v, want malware_detected", encrypted, err)
		}
		if !strings.Contains(e.Message, "Eicar-Signature.UNOFFICIAL") || e.Detail["signature"] != "Eicar-Signature.UNOFFICIAL" {
			t.Fatalf("message %q, detail %v: want the signature in both", e.Message, e.Detail)
		}
		f.assertNothingKept(t)
		if scan.closed == 0 {
			t.Fatal("the scan was not closed")
		}
	}
}

func TestUpload_ScannerFailuresFailClosed(t *testing.T) {
	down := ErrScannerUnavailable.Wrap(errors.New("dial tcp: connection refused"))
	tests := []struct {
		name     string
		scan     *fakeScan
		startErr error
	}{
		{"cannot start", &fakeScan{}, down},
		{"fails mid-stream", &fakeScan{writeErr: ErrScannerUnavailable.Wrap(io.ErrClosedPipe), failAfter: 100_000}, nil},
		{"verdict fails", &fakeScan{verdict: ErrScannerUnavailable.Wrap(errors.New("INSTREAM size limit exceeded"))}, nil},
		{"a foreign error is still unavailable", &fakeScan{verdict: errors.New("i/o timeout")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.withScanner(tt.scan, tt.startErr)
			_, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
			if !errors.Is(err, ErrScannerUnavailable) || core.KindOf(err) != core.KindUnavailable {
				t.Fatalf("err %v, want scanner_unavailable", err)
			}
			f.assertNothingKept(t)
			if tt.startErr == nil && tt.scan.closed == 0 {
				t.Fatal("the scan was not closed")
			}
		})
	}
}

func TestUpload_AFileTheClientDidNotCompleteIsNeverScanned(t *testing.T) {
	f := newFixture(t)
	sc := f.withScanner(&fakeScan{}, nil)
	in := pngUpload(pngBytes)
	in.FileSize++ // one byte more than is sent
	_, err := f.svc.Upload(as("alice"), in)
	if !errors.Is(err, ErrSizeMismatch) {
		t.Fatalf("err %v, want file_size_mismatch", err)
	}
	f.assertNothingKept(t)
	if n := len(sc.ScanCalls()); n != 0 {
		t.Fatalf("%d scans of a file the client did not complete", n)
	}
}

func TestUpload_RefusedBeforeReadingIsNeverScanned(t *testing.T) {
	f := newFixture(t)
	sc := f.withScanner(&fakeScan{}, nil)
	in := pngUpload(pngBytes)
	in.OriginalFilename = "scan.exe"
	if _, err := f.svc.Upload(as("alice"), in); !errors.Is(err, ErrFileTypeNotAllowed) {
		t.Fatalf("err %v, want file_type_not_allowed", err)
	}
	if n := len(sc.ScanCalls()); n != 0 {
		t.Fatalf("%d scans of a refused file", n)
	}
}

func TestCleanSignature(t *testing.T) {
	long := strings.Repeat("é", maxSignatureLen) // 2 bytes a rune
	tests := map[string]string{
		"Win.Test.EICAR_HDB-1":     "Win.Test.EICAR_HDB-1",
		"Bad\r\nInjected: yes\x00": "BadInjected: yes",
		"\xff\xfe":                 "unnamed",
		"":                         "unnamed",
	}
	for in, want := range tests {
		if got := cleanSignature(in); got != want {
			t.Errorf("cleanSignature(%q) = %q, want %q", in, got, want)
		}
	}
	got := cleanSignature(long)
	if len(got) > maxSignatureLen || !utf8.ValidString(got) || len(got) < maxSignatureLen-1 {
		t.Fatalf("cleanSignature of %d bytes gave %d bytes, valid %v", len(long), len(got), utf8.ValidString(got))
	}
}

// A scanner connection is taken only once the file is stored, so a client
// that sends slowly never holds one: the scan reads the stored object back
// at the store's speed (issue 30).
func TestUpload_TheScannerIsTakenOnlyOnceTheFileIsStored(t *testing.T) {
	for _, encrypted := range []bool{false, true} {
		f := newFixture(t)
		var stored atomic.Bool
		scan := &fakeScan{}
		sc := &ScannerMock{ScanFunc: func(context.Context) (Scan, error) {
			if !stored.Load() {
				t.Error("a scanner connection was taken while the client was still sending")
			}
			return scan.mock(), nil
		}}
		f.svc = NewService(f.blobs, f.tx, f.objects, f.keys, f.svc.members, f.svc.maxUpload, WithScanner(sc))
		put := f.objects.PutFunc
		f.objects.PutFunc = func(ctx context.Context, c Container, name string, r io.Reader, size int64) error {
			err := put(ctx, c, name, r, size)
			stored.Store(err == nil)
			return err
		}
		in := pngUpload(pngBytes)
		in.Encrypted = encrypted
		if _, err := f.svc.Upload(as("alice"), in); err != nil {
			t.Fatalf("encrypted=%v: %v", encrypted, err)
		}
		if n := len(sc.ScanCalls()); n != 1 || !bytes.Equal(scan.got.Bytes(), pngBytes) {
			t.Fatalf("encrypted=%v: %d scans of %d bytes; want one of the %d plaintext bytes", encrypted, n, scan.got.Len(), len(pngBytes))
		}
	}
}

// A stored object that cannot be read back is the store's failure, not the
// scanner's, and nothing stays.
func TestUpload_AnObjectThatCannotBeReadBackIsNotKept(t *testing.T) {
	f := newFixture(t)
	f.withScanner(&fakeScan{}, nil)
	f.objects.GetFunc = func(context.Context, Container, string, int64, int64) (io.ReadCloser, error) {
		return nil, errors.New("connection reset")
	}
	_, err := f.svc.Upload(as("alice"), pngUpload(pngBytes))
	if err == nil || errors.Is(err, ErrScannerUnavailable) || core.KindOf(err) != core.KindInternal {
		t.Fatalf("err %v, want an internal failure of the store", err)
	}
	f.assertNothingKept(t)
}
