package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
)

// readyJSON is the body of a ready /readyz: its status, and the sync
// detail when the service polls EHR systems.
type readyJSON struct {
	Status  string          `json:"status"`
	Sync    []syncStateJSON `json:"sync,omitempty"`
	Scanner *scannerJSON    `json:"scanner,omitempty"`
}

// ScannerState is what the malware scanner answered /readyz's probe: nil,
// or why it did not answer. A scanner that is down shows here and does not
// make the service unready: uploads are refused with 503
// scanner_unavailable meanwhile (fail closed), and everything else is
// served. Its version is not shown: /readyz is anonymous.
type ScannerState struct {
	Err error
}

// ScannerLoad is how busy the scanner's connections are now: in use (at
// most Max) and the scans waiting for one.
type ScannerLoad struct {
	InUse, Max, Waiting int
}

// scannerJSON is the scanner on the wire: status "up" or "unavailable",
// and its connections' load (saturated: every one in use).
type scannerJSON struct {
	Status           string `json:"status"`
	ConnectionsInUse int    `json:"connectionsInUse"`
	MaxConnections   int    `json:"maxConnections"`
	Waiting          int    `json:"waiting"`
	Saturated        bool   `json:"saturated"`
}

// DefaultReadyTTL is how long a readiness probe's result answers /readyz.
const DefaultReadyTTL = time.Second

// readyTimeout bounds one readiness probe.
const readyTimeout = 5 * time.Second

// probe is the result of one readiness probe.
type probe struct {
	err     error         // a dependency down: not ready
	scanner *ScannerState // nil: no scanner
	at      time.Time
}

// readiness answers /readyz from the last probe of the dependencies for
// ttl, and runs one probe at a time: anonymous callers, however many,
// cause at most one probe (a database, object store, Redis ping and a
// clamd connection) per ttl. The probe runs with a context of its own, so
// a caller that hangs up does not fail it for the others waiting.
type readiness struct {
	check func(ctx context.Context) probe
	ttl   time.Duration

	mu      sync.Mutex
	last    *probe
	running chan struct{} // closed when the probe in flight ends; nil: none
}

// get returns a probe's result no older than ttl, probing when there is
// none, or waiting for the probe in flight (or for ctx).
func (r *readiness) get(ctx context.Context) (probe, error) {
	r.mu.Lock()
	if r.last != nil && time.Since(r.last.at) < r.ttl {
		p := *r.last
		r.mu.Unlock()
		return p, nil
	}
	done := r.running
	if done == nil {
		done = make(chan struct{})
		r.running = done
		r.mu.Unlock()
		return r.run(ctx, done), nil
	}
	r.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return probe{}, ctx.Err()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return *r.last, nil
}

// run probes, keeps the result and lets the callers waiting for it go.
func (r *readiness) run(ctx context.Context, done chan struct{}) (p probe) {
	defer func() {
		p.at = time.Now()
		r.mu.Lock()
		r.last, r.running = &p, nil
		r.mu.Unlock()
		close(done)
	}()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyTimeout)
	defer cancel()
	return r.check(ctx)
}

// probe checks the dependencies and the scanner once; what is down is
// logged here, once a probe.
func (s *Server) probe(ctx context.Context) probe {
	var p probe
	if p.err = s.ready(ctx); p.err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "not ready", slog.String("error", p.err.Error()))
		return p
	}
	if s.scanner != nil {
		st := s.scanner(ctx)
		if st.Err != nil {
			s.log.LogAttrs(ctx, slog.LevelWarn, "malware scanner not answering", slog.String("error", st.Err.Error()))
		}
		p.scanner = &st
	}
	return p
}

var errNotReady = &core.Error{Kind: core.KindUnavailable, Code: "not_ready", Message: "A dependency is not reachable"}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	p, err := s.readiness.get(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if p.err != nil {
		s.writeError(w, r, errNotReady)
		return
	}
	writeJSON(w, http.StatusOK, readyJSON{Status: "ready", Sync: s.syncStates(), Scanner: s.scannerState(p.scanner)})
}

// scannerState is the scanner detail of /readyz (nil: no scanner): the
// probe's answer and the connections' load now.
func (s *Server) scannerState(st *ScannerState) *scannerJSON {
	if st == nil {
		return nil
	}
	j := &scannerJSON{Status: "up"}
	if st.Err != nil {
		j.Status = "unavailable"
	}
	if s.scannerLoad != nil {
		l := s.scannerLoad()
		j.ConnectionsInUse, j.MaxConnections, j.Waiting = l.InUse, l.Max, l.Waiting
		j.Saturated = l.Max > 0 && l.InUse >= l.Max
	}
	return j
}

// syncStateJSON is an ehr.SyncState on the wire: times RFC 3339 (null: none),
// the lag in seconds, the error code null when the last poll succeeded.
type syncStateJSON struct {
	EHR        string     `json:"ehr"`
	LagSeconds float64    `json:"lagSeconds"`
	Watermark  *time.Time `json:"watermark"`
	LastPollAt *time.Time `json:"lastPollAt"`
	LastError  *string    `json:"lastError"`
}

// syncStates is the sync detail of /readyz (nil: no system is polled).
func (s *Server) syncStates() []syncStateJSON {
	if s.sync == nil {
		return nil
	}
	var out []syncStateJSON
	for _, st := range s.sync() {
		j := syncStateJSON{EHR: st.EHR, LagSeconds: st.Lag.Seconds(), Watermark: timeOrNil(st.Watermark), LastPollAt: timeOrNil(st.LastPollAt)}
		if st.LastError != "" {
			j.LastError = &st.LastError
		}
		out = append(out, j)
	}
	return out
}

// timeOrNil is t in UTC, or nil when it is zero.
func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
