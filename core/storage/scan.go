package storage

import (
	"context"
	"errors"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxSignatureLen bounds the signature name a refusal reports.
const maxSignatureLen = 200

// scanning is the malware scan of one upload as the upload sees it: a
// writer that keeps the scanner's first failure, so that a failed upload
// can tell it from the client's and the store's. Without a scanner it
// only discards.
type scanning struct {
	scan Scan // nil: no scanner
	err  error
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
	return &scanning{scan: scan}, nil
}

func (sc *scanning) Write(p []byte) (int, error) {
	if sc.scan == nil {
		return len(p), nil
	}
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

// verdict ends the file and returns ErrMalwareDetected, naming the
// signature, when the scanner found something, or its failure.
func (sc *scanning) verdict() error {
	if sc.scan == nil {
		return nil
	}
	sig, err := sc.scan.Verdict()
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

// Close releases the scan's connection.
func (sc *scanning) Close() {
	if sc.scan != nil {
		_ = sc.scan.Close()
	}
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
