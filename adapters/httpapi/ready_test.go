package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func readyServer(ready error, sync func() []SyncState) *Server {
	return New(Config{
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Auth:     tokens{},
		Storage:  &StorageMock{},
		Registry: prometheus.NewRegistry(),
		Ready:    func(context.Context) error { return ready },
		Sync:     sync,
	})
}

// /readyz keeps its shape and adds the sync detail of each polled EHR
// system: an EHR that is down shows there and the service stays ready.
func TestReadyz_ShowsEachSyncedSystemAndStaysReadyWhenAnEHRIsDown(t *testing.T) {
	polled := time.Date(2026, 5, 1, 10, 0, 0, 0, time.FixedZone("x", 3600))
	s := readyServer(nil, func() []SyncState {
		return []SyncState{
			{EHR: "down", Lag: 90 * time.Second, LastPollAt: polled, LastError: "ehr_unavailable"},
			{EHR: "fine", Lag: 1500 * time.Millisecond, Watermark: polled.Add(-time.Minute), LastPollAt: polled},
			{EHR: "new"},
		}
	})
	w := do(t, s, "GET", "/readyz", nil, "Authorization", "")
	want := `{"status":"ready","sync":[` +
		`{"ehr":"down","lagSeconds":90,"watermark":null,"lastPollAt":"2026-05-01T09:00:00Z","lastError":"ehr_unavailable"},` +
		`{"ehr":"fine","lagSeconds":1.5,"watermark":"2026-05-01T08:59:00Z","lastPollAt":"2026-05-01T09:00:00Z","lastError":null},` +
		`{"ehr":"new","lagSeconds":0,"watermark":null,"lastPollAt":null,"lastError":null}]}`
	if w.Code != 200 || strings.TrimSpace(w.Body.String()) != want {
		t.Fatalf("readyz: %d %s\nwant %s", w.Code, w.Body, want)
	}
}

func TestReadyz_WithoutSyncKeepsItsShape(t *testing.T) {
	for _, sync := range []func() []SyncState{nil, func() []SyncState { return nil }} {
		w := do(t, readyServer(nil, sync), "GET", "/readyz", nil, "Authorization", "")
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"status":"ready"}` {
			t.Errorf("readyz: %d %s", w.Code, w.Body)
		}
	}
}

// A dependency down is 503 not_ready, with no sync detail.
func TestReadyz_NotReadyIsTheErrorEnvelope(t *testing.T) {
	s := readyServer(errors.New("dial tcp: refused"), func() []SyncState { return []SyncState{{EHR: "x"}} })
	w := do(t, s, "GET", "/readyz", nil, "Authorization", "")
	if e := errEnvelope(t, w); w.Code != 503 || e.Code != "not_ready" {
		t.Fatalf("readyz: %d %s", w.Code, w.Body)
	}
}

// The scanner shows in /readyz: up with its version, or unavailable; a
// scanner that is down leaves the service ready (uploads refuse alone).
func TestReadyz_ReportsTheScanner(t *testing.T) {
	tests := []struct {
		state ScannerState
		want  string
	}{
		{ScannerState{Version: "ClamAV 1.4.6/27500/Wed Nov 25 09:00:00 2026"},
			`{"status":"ready","scanner":{"status":"up","version":"ClamAV 1.4.6/27500/Wed Nov 25 09:00:00 2026"}}`},
		{ScannerState{Err: errors.New("dial unix /run/clamd.sock: connect: no such file")},
			`{"status":"ready","scanner":{"status":"unavailable","version":null}}`},
	}
	for _, tt := range tests {
		s := readyServer(nil, nil)
		s.scanner = func(context.Context) ScannerState { return tt.state }
		w := do(t, s, "GET", "/readyz", nil, "Authorization", "")
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != tt.want {
			t.Errorf("readyz: %d %s\nwant %s", w.Code, w.Body, tt.want)
		}
	}
}
