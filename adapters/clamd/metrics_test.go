package clamd

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/promtest"
)

// stubScan answers sig or err; writes fail with writeErr.
type stubScan struct {
	sig      string
	err      error
	writeErr error
}

func (s stubScan) Write(p []byte) (int, error) {
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	return len(p), nil
}
func (s stubScan) Verdict() (string, error) { return s.sig, s.err }
func (s stubScan) Close() error             { return nil }

type stubScanner struct {
	scan stubScan
	err  error
}

func (s stubScanner) Scan(context.Context) (storage.Scan, error) { return s.scan, s.err }
func (s stubScanner) Ping(context.Context) error                 { return s.err }

func TestMeteredScanner_CountsEachScanOnceByResult(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newScanMetrics(reg)
	down := storage.ErrScannerUnavailable.Wrap(errors.New("refused"))
	runs := []struct {
		scanner stubScanner
		verdict bool // the upload reached the verdict
	}{
		{stubScanner{}, true},                                // clean
		{stubScanner{scan: stubScan{sig: "Eicar"}}, true},    // infected
		{stubScanner{scan: stubScan{err: down}}, true},       // error at the verdict
		{stubScanner{err: down}, false},                      // error at the start
		{stubScanner{scan: stubScan{writeErr: down}}, false}, // error mid-stream
		{stubScanner{}, false},                               // aborted: the upload failed first
	}
	for _, r := range runs {
		sc, err := meteredScanner{next: r.scanner, m: m}.Scan(context.Background())
		if err != nil {
			continue
		}
		sc.Write([]byte("x"))
		if r.verdict {
			sc.Verdict()
		}
		sc.Close()
		sc.Close()
	}
	for result, want := range map[string]float64{scanClean: 1, scanInfected: 1, scanError: 3, scanAborted: 1} {
		if got, _ := promtest.Value(t, reg, "carebridge_scans_total", map[string]string{"result": result}); got != want {
			t.Errorf("%s: %v, want %v", result, got, want)
		}
	}
	if n, _ := promtest.Value(t, reg, "carebridge_scan_duration_seconds", nil); n != 2 { // the two verdicts
		t.Fatalf("%v verdict waits observed, want 2", n)
	}
}
