package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core/storage/segcrypt"
)

// maxSignatureLen bounds the signature name a refusal reports.
const maxSignatureLen = 200

// scanStored scans the stored object of b, the upload just written under
// its fresh name, before its row is committed: its plaintext, decrypted
// with dataKey when b is encrypted, goes to the scanner at the speed of
// the store, not of the client. A scanner connection is therefore held for
// the time a scan takes, never for as long as a slow client sends: the
// file is spooled to the store first (issue 30). It returns
// ErrMalwareDetected, naming the signature, when the scanner found
// something, ErrScannerUnavailable when the scanner failed, or the store's
// failure to read the object back.
func (s *Service) scanStored(ctx context.Context, b Blob, dataKey []byte) error {
	if s.scanner == nil {
		return nil
	}
	// The connection first: a wait for one holds no stream of the store.
	scan, err := s.scanner.Scan(ctx)
	if err != nil {
		return scannerError(err)
	}
	defer scan.Close()
	src, err := s.openStored(ctx, b, dataKey)
	if err != nil {
		return fmt.Errorf("read back %s/%s to scan it: %w", b.Container, b.Name, err)
	}
	defer src.Close()
	w := &scanWriter{scan: scan}
	buf := scanBuffers.Get().(*[]byte)
	defer scanBuffers.Put(buf)
	n, err := io.CopyBuffer(w, src, *buf)
	switch {
	case w.err != nil:
		return w.err
	case err != nil:
		return fmt.Errorf("read back %s/%s to scan it: %w", b.Container, b.Name, corrupt(err))
	case n != b.Size:
		return fmt.Errorf("read back %s/%s to scan it: %d bytes, want %d", b.Container, b.Name, n, b.Size)
	}
	sig, err := scan.Verdict()
	switch {
	case err != nil:
		return scannerError(err)
	case sig == "":
		return nil
	}
	sig = cleanSignature(sig)
	e := ErrMalwareDetected.WithMessage("The file carries malware (%s); it was not stored", sig)
	e.Detail = map[string]string{"signature": sig}
	return e
}

// openStored opens the whole stored object of b as plaintext.
func (s *Service) openStored(ctx context.Context, b Blob, dataKey []byte) (io.ReadCloser, error) {
	obj, err := s.objects.Get(ctx, b.Container, b.Name, 0, -1)
	if err != nil || !b.Encrypted {
		return obj, err
	}
	plain, err := segcrypt.DecryptReader(obj, dataKey, 0, segcrypt.FinalSegment(b.Size))
	if err != nil {
		obj.Close()
		return nil, err
	}
	return readCloser{Reader: plain, Closer: obj}, nil
}

// scanBufferSize is the copy buffer of a scan's read-back (a reader that
// writes itself out, a decrypted file, leaves it unused).
const scanBufferSize = 256 << 10

var scanBuffers = sync.Pool{New: func() any { b := make([]byte, scanBufferSize); return &b }}

// scanWriter is the scanner as the read-back's writer: it keeps the
// scanner's first failure, so that it is told from the store's.
type scanWriter struct {
	scan Scan
	err  error
}

func (w *scanWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.scan.Write(p)
	if err != nil {
		w.err = scannerError(err)
		return n, w.err
	}
	return n, nil
}

// scannerError is err as ErrScannerUnavailable, which a Scanner should
// return already; anything else becomes one (fail closed).
func scannerError(err error) error {
	if errors.Is(err, ErrScannerUnavailable) {
		return err
	}
	return ErrScannerUnavailable.Wrap(err)
}

// cleanSignature makes a scanner's signature name safe to show and to
// record: printable, at most maxSignatureLen bytes.
func cleanSignature(sig string) string {
	sig = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) && r != unicode.ReplacementChar {
			return r
		}
		return -1
	}, sig)
	for len(sig) > maxSignatureLen {
		_, n := utf8.DecodeLastRuneInString(sig)
		sig = sig[:len(sig)-n]
	}
	if sig == "" {
		return "unnamed"
	}
	return sig
}
