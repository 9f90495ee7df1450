package app

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/core/storage"
)

// The results a scan is counted under.
const (
	scanClean    = "clean"    // the verdict found nothing
	scanInfected = "infected" // the verdict named a signature
	scanError    = "error"    // the scanner failed (the upload was refused)
	scanAborted  = "aborted"  // the upload ended before the verdict (client's fault, store's)
)

// scanMetrics count scans by result and time clamd's verdicts.
type scanMetrics struct {
	scans    *prometheus.CounterVec
	duration prometheus.Histogram
}

func newScanMetrics(reg prometheus.Registerer) *scanMetrics {
	m := &scanMetrics{
		scans: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_scans_total",
			Help: "Malware scans of uploads by result: clean, infected, error (scanner unavailable; the upload was refused), aborted (the upload failed first).",
		}, []string{"result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "carebridge_scan_duration_seconds",
			Help:    "Time from the end of an uploaded file to the scanner's verdict: what scanning adds to an upload.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
	for _, r := range []string{scanClean, scanInfected, scanError, scanAborted} {
		m.scans.WithLabelValues(r)
	}
	reg.MustRegister(m.scans, m.duration)
	return m
}

// meteredScanner counts the scans of next.
type meteredScanner struct {
	next storage.Scanner
	m    *scanMetrics
}

func (s meteredScanner) Scan(ctx context.Context) (storage.Scan, error) {
	sc, err := s.next.Scan(ctx)
	if err != nil {
		s.m.scans.WithLabelValues(scanError).Inc()
		return nil, err
	}
	return &meteredScan{Scan: sc, m: s.m}, nil
}

func (s meteredScanner) Ping(ctx context.Context) error { return s.next.Ping(ctx) }

// meteredScan counts one scan once, when its result is known.
type meteredScan struct {
	storage.Scan
	m      *scanMetrics
	once   sync.Once
	failed bool // a write failed: the scanner's fault
}

func (s *meteredScan) Write(p []byte) (int, error) {
	n, err := s.Scan.Write(p)
	if err != nil {
		s.failed = true
	}
	return n, err
}

func (s *meteredScan) Verdict() (string, error) {
	start := time.Now()
	sig, err := s.Scan.Verdict()
	result := scanClean
	switch {
	case err != nil:
		result = scanError
	case sig != "":
		result = scanInfected
	}
	if err == nil {
		s.m.duration.Observe(time.Since(start).Seconds())
	}
	s.count(result)
	return sig, err
}

func (s *meteredScan) Close() error {
	if s.failed {
		s.count(scanError)
	} else {
		s.count(scanAborted)
	}
	return s.Scan.Close()
}

func (s *meteredScan) count(result string) {
	s.once.Do(func() { s.m.scans.WithLabelValues(result).Inc() })
}

// buildScanner connects the malware scanner of cfg (nil: uploads are not
// scanned) and returns the storage option that scans every upload, and
// the scanner's state for /readyz.
func buildScanner(cfg *clamd.Config, reg prometheus.Registerer) ([]storage.Option, func(context.Context) httpapi.ScannerState, error) {
	if cfg == nil {
		return nil, nil, nil
	}
	c, err := clamd.New(*cfg)
	if err != nil {
		return nil, nil, err
	}
	state := func(ctx context.Context) httpapi.ScannerState {
		v, err := c.Version(ctx)
		return httpapi.ScannerState{Version: v, Err: err}
	}
	return []storage.Option{storage.WithScanner(meteredScanner{next: c, m: newScanMetrics(reg)})}, state, nil
}
