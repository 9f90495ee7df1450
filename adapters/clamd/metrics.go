package clamd

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/storage"
)

// The results a scan is counted under.
const (
	scanClean    = "clean"    // the verdict found nothing
	scanInfected = "infected" // the verdict named a signature
	scanError    = "error"    // the scanner failed (the upload was refused)
	scanAborted  = "aborted"  // the upload ended before the verdict (client's fault, store's)
)

// RegisterStats registers on reg the gauges of c's Stats: the scans open
// on clamd connections and the uploads waiting for one, now.
func (c *Client) RegisterStats(reg prometheus.Registerer) {
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "carebridge_scanner_connections_in_use",
			Help: "Scans open on clamd connections now (at most CLAMD_MAX_CONNECTIONS)."},
			func() float64 { return float64(c.Stats().InUse) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "carebridge_scanner_waiting",
			Help: "Uploads waiting for a clamd connection now (each at most CLAMD_WAIT_TIMEOUT, then refused with 503)."},
			func() float64 { return float64(c.Stats().Waiting) }),
	)
}

// Metered is next counting its scans by result on reg and timing their
// verdicts: what scanning adds to an upload, and how often it refuses one.
func Metered(next storage.Scanner, reg prometheus.Registerer) storage.Scanner {
	return meteredScanner{next: next, m: newScanMetrics(reg)}
}

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
