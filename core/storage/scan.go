package storage

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxSignatureLen bounds the signature name a refusal reports.
const maxSignatureLen = 200

// scanning is the malware scan of one upload as the upload sees it: a
// writer that keeps the scanner's first failure, so that a failed upload
// can tell it from the client's and the store's. Without a scanner
// (scan nil) it is left out of the upload's pass (alongside, endOnEOF).
type scanning struct {
	scan Scan // nil: no scanner
	err  error

	// The verdict is asked for as soon as the file's last byte was read
	// (endOnEOF), so that the scanner scans while the store finishes
	// the object; done is closed when it is in.
	ask       sync.Once
	done      chan struct{}
	signature string
	verdErr   error
}

// startScan starts the scan of one upload.
func (s *Service) startScan(ctx context.Context) (*scanning, error) {
	if s.scanner == nil {
		return &scanning{}, nil
	}
	scan, err := s.scanner.Scan(ctx)
	if err != nil {
		return nil, scannerError(err)
	}
	return &scanning{scan: scan, done: make(chan struct{})}, nil
}

func (sc *scanning) Write(p []byte) (int, error) {
	if sc.err != nil {
		return 0, sc.err
	}
	n, err := sc.scan.Write(p)
	if err != nil {
		sc.err = scannerError(err)
		return n, sc.err
	}
	return n, nil
}

// alongside returns a writer that gives what it is given to w and to the
// scanner (w alone without one).
func (sc *scanning) alongside(w io.Writer) io.Writer {
	if sc.scan == nil {
		return w
	}
	return io.MultiWriter(w, sc)
}

// endOnEOF returns r, which asks for the verdict when it reaches its end
// (io.EOF: every byte of the file was read and scanned).
func (sc *scanning) endOnEOF(r io.Reader) io.Reader {
	if sc.scan == nil {
		return r
	}
	return eofHook{r: r, fn: sc.askVerdict}
}

// askVerdict ends the file and waits for the answer in the background,
// once.
func (sc *scanning) askVerdict() {
	sc.ask.Do(func() {
		go func() {
			defer close(sc.done)
			sc.signature, sc.verdErr = sc.scan.Verdict()
		}()
	})
}

// verdict waits for the answer (asking for it first when the file's end
// was not seen) and returns ErrMalwareDetected, naming the signature,
// when the scanner found something, or its failure.
func (sc *scanning) verdict() error {
	if sc.scan == nil {
		return nil
	}
	sc.askVerdict()
	<-sc.done
	sig, err := sc.signature, sc.verdErr
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

// eofHook calls fn when r reports io.EOF.
type eofHook struct {
	r  io.Reader
	fn func()
}

func (h eofHook) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if err == io.EOF {
		h.fn()
	}
	return n, err
}

// Close releases the scan's connection; a verdict still awaited is
// abandoned (the scanner's Close ends it) and waited for.
func (sc *scanning) Close() {
	if sc.scan == nil {
		return
	}
	_ = sc.scan.Close()
	sc.ask.Do(func() { close(sc.done) }) // never asked: nothing to wait for
	<-sc.done
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
