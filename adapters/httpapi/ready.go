package httpapi

import (
	"context"
	"log/slog"
	"time"
)

// SyncState is where the poller of one EHR system stands (EHR sync), as
// /readyz shows it. An EHR that is down shows here and does not make the
// service unready: the service still serves everything else, and its
// poller catches up from the watermark when the EHR returns.
type SyncState struct {
	EHR string
	// Lag is the time since the last successful poll of the system (by
	// any instance, as this one last saw it).
	Lag time.Duration
	// Watermark is the EHR's own time of the newest change taken in,
	// LastPollAt the last poll's end (zero: none).
	Watermark, LastPollAt time.Time
	// LastError is the last poll's failure code ("" none).
	LastError string
}

// readyJSON is the body of a ready /readyz: its status, and the sync
// detail when the service polls EHR systems.
type readyJSON struct {
	Status  string          `json:"status"`
	Sync    []syncStateJSON `json:"sync,omitempty"`
	Scanner *scannerJSON    `json:"scanner,omitempty"`
}

// ScannerState is what the malware scanner answered /readyz: its version
// (with its signature database's), or why it did not answer. A scanner
// that is down shows here and does not make the service unready: uploads
// are refused with 503 scanner_unavailable meanwhile (fail closed), and
// everything else is served.
type ScannerState struct {
	Version string
	Err     error
}

// scannerJSON is a ScannerState on the wire: status "up" or "unavailable".
type scannerJSON struct {
	Status  string  `json:"status"`
	Version *string `json:"version"`
}

// scannerState is the scanner detail of /readyz (nil: no scanner).
func (s *Server) scannerState(ctx context.Context) *scannerJSON {
	if s.scanner == nil {
		return nil
	}
	st := s.scanner(ctx)
	if st.Err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "malware scanner not answering", slog.String("error", st.Err.Error()))
		return &scannerJSON{Status: "unavailable"}
	}
	return &scannerJSON{Status: "up", Version: &st.Version}
}

// syncStateJSON is a SyncState on the wire: times RFC 3339 (null: none),
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
