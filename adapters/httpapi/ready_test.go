package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
)

func readyServer(ready error, sync func() []ehr.SyncState) *Server {
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
	s := readyServer(nil, func() []ehr.SyncState {
		return []ehr.SyncState{
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
	for _, sync := range []func() []ehr.SyncState{nil, func() []ehr.SyncState { return nil }} {
		w := do(t, readyServer(nil, sync), "GET", "/readyz", nil, "Authorization", "")
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"status":"ready"}` {
			t.Errorf("readyz: %d %s", w.Code, w.Body)
		}
	}
}

// A dependency down is 503 not_ready, with no sync detail.
func TestReadyz_NotReadyIsTheErrorEnvelope(t *testing.T) {
	s := readyServer(errors.New("dial tcp: refused"), func() []ehr.SyncState { return []ehr.SyncState{{EHR: "x"}} })
	w := do(t, s, "GET", "/readyz", nil, "Authorization", "")
	if e := errEnvelope(t, w); w.Code != 503 || e.Code != "not_ready" {
		t.Fatalf("readyz: %d %s", w.Code, w.Body)
	}
}

// The scanner shows in /readyz: up or unavailable, with its connections'
// load; never its version (the caller is anonymous). A scanner that is
// down leaves the service ready (uploads refuse alone).
func TestReadyz_ReportsTheScannerAndItsLoadButNotItsVersion(t *testing.T) {
	tests := []struct {
		state ScannerState
		load  ScannerLoad
		want  string
	}{
		{ScannerState{}, ScannerLoad{InUse: 3, Max: 8},
			`{"status":"ready","scanner":{"status":"up","connectionsInUse":3,"maxConnections":8,"waiting":0,"saturated":false}}`},
		{ScannerState{}, ScannerLoad{InUse: 8, Max: 8, Waiting: 2},
			`{"status":"ready","scanner":{"status":"up","connectionsInUse":8,"maxConnections":8,"waiting":2,"saturated":true}}`},
		{ScannerState{Err: errors.New("dial unix /run/clamd.sock: connect: no such file")}, ScannerLoad{Max: 8},
			`{"status":"ready","scanner":{"status":"unavailable","connectionsInUse":0,"maxConnections":8,"waiting":0,"saturated":false}}`},
	}
	for _, tt := range tests {
		s := readyServer(nil, nil)
		s.scanner = func(context.Context) ScannerState { return tt.state }
		s.scannerLoad = func() ScannerLoad { return tt.load }
		w := do(t, s, "GET", "/readyz", nil, "Authorization", "")
		if w.Code != 200 || strings.TrimSpace(w.Body.String()) != tt.want {
			t.Errorf("readyz: %d %s\nwant %s", w.Code, w.Body, tt.want)
		}
	}
}

// countingProbes makes s's dependencies and scanner count their probes;
// each probe waits for release when it is set.
func countingProbes(s *Server, ready error, release <-chan struct{}) (deps, scans *atomic.Int64) {
	deps, scans = new(atomic.Int64), new(atomic.Int64)
	s.ready = func(context.Context) error {
		deps.Add(1)
		if release != nil {
			<-release
		}
		return ready
	}
	s.scanner = func(context.Context) ScannerState { scans.Add(1); return ScannerState{} }
	return deps, scans
}

// Anonymous callers, however many at once, cause one probe of the
// dependencies and the scanner; its answer serves /readyz for the TTL,
// a failure as well as a success.
func TestReadyz_OneProbeAtATimeAnsweringForTheTTL(t *testing.T) {
	for _, ready := range []error{nil, errors.New("dial tcp: refused")} {
		synctest.Test(t, func(t *testing.T) {
			s := readyServer(nil, nil)
			release := make(chan struct{})
			deps, scans := countingProbes(s, ready, release)
			want := 200
			if ready != nil {
				want = 503
			}
			codes := make(chan int, 20)
			for range 20 {
				go func() { codes <- do(t, s, "GET", "/readyz", nil, "Authorization", "").Code }()
			}
			synctest.Wait() // every caller is waiting for the one probe
			if n := deps.Load(); n != 1 {
				t.Fatalf("%d probes in flight for 20 callers, want 1", n)
			}
			close(release)
			for range 20 {
				if c := <-codes; c != want {
					t.Fatalf("readyz %d, want %d", c, want)
				}
			}
			time.Sleep(DefaultReadyTTL - time.Millisecond)
			if c := do(t, s, "GET", "/readyz", nil, "Authorization", "").Code; c != want || deps.Load() != 1 {
				t.Fatalf("within the TTL: %d after %d probes; want %d after 1", c, deps.Load(), want)
			}
			time.Sleep(time.Millisecond)
			do(t, s, "GET", "/readyz", nil, "Authorization", "")
			if deps.Load() != 2 {
				t.Fatalf("after the TTL: %d probes, want 2", deps.Load())
			}
			if ready == nil && scans.Load() != 2 {
				t.Fatalf("%d scanner probes, want 2", scans.Load())
			}
		})
	}
}

// A caller that hangs up while the probe runs neither fails it nor leaves
// the callers after it without an answer.
func TestReadyz_ACallerThatHangsUpDoesNotFailTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := readyServer(nil, nil)
		release := make(chan struct{})
		var probeErr error
		s.ready = func(ctx context.Context) error {
			<-release
			probeErr = ctx.Err()
			return nil
		}
		ctx, cancel := context.WithCancel(context.Background())
		first := make(chan int, 1)
		go func() {
			r := httptest.NewRequestWithContext(ctx, "GET", "/readyz", nil)
			w := httptest.NewRecorder()
			s.ServeHTTP(w, r)
			first <- w.Code
		}()
		synctest.Wait()
		cancel()
		close(release)
		<-first
		if probeErr != nil {
			t.Fatalf("the probe ran with a done context: %v", probeErr)
		}
		if c := do(t, s, "GET", "/readyz", nil, "Authorization", "").Code; c != 200 {
			t.Fatalf("readyz after a caller hung up: %d", c)
		}
	})
}
