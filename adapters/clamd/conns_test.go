package clamd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestScan_MaxConnsBound(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", always(behave))
	cfg := f.config()
	cfg.MaxConns = 2
	c := newClient(t, cfg)
	s1, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()

	// A third waits; its ctx ends the wait without a connection.
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Scan(ctx)
	wantUnavailable(t, err, context.DeadlineExceeded)
	if n := f.accepted.Load(); n != 2 {
		t.Fatalf("clamd accepted %d connections, want 2", n)
	}

	// A third waits until one closes.
	got := make(chan error, 1)
	go func() {
		s3, err := c.Scan(t.Context())
		if err == nil {
			_, err = s3.Verdict()
			_ = s3.Close()
		}
		got <- err
	}()
	if _, err := s1.Write([]byte("one")); err != nil {
		t.Fatal(err)
	}
	if sig, err := s1.Verdict(); err != nil || sig != "" {
		t.Fatalf("first scan: %q, %v", sig, err)
	}
	if err := <-got; err != nil {
		t.Fatalf("third scan: %v", err)
	}
	if sig, err := s2.Verdict(); err != nil || sig != "" {
		t.Fatalf("second scan: %q, %v", sig, err)
	}
}

// A scan waits for a free connection at most WaitTimeout, then is refused
// as busy with a Retry-After; Stats shows the connections in use and the
// scans waiting meanwhile.
func TestScan_TheWaitForAConnectionIsBounded(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", always(behave))
	cfg := f.config()
	cfg.MaxConns, cfg.WaitTimeout = 1, 50*time.Millisecond
	c := newClient(t, cfg)
	s1, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if st := c.Stats(); st != (Stats{InUse: 1, Max: 1}) {
		t.Fatalf("stats with one scan open: %+v", st)
	}
	_, err = c.Scan(t.Context())
	wantUnavailable(t, err, nil)
	var e *core.Error
	if !errors.As(err, &e) || e.RetryAfter <= 0 || !strings.Contains(e.Message, "busy") {
		t.Fatalf("a scan refused as busy: %v (%+v)", err, e)
	}
	if n := f.accepted.Load(); n != 1 {
		t.Fatalf("clamd accepted %d connections, want 1", n)
	}

	// One that waits shows in Stats, and gets the connection once it is
	// free.
	cfg.WaitTimeout = time.Minute
	c2 := newClient(t, cfg)
	s2, err := c2.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		s3, err := c2.Scan(t.Context())
		if err == nil {
			err = s3.Close()
		}
		got <- err
	}()
	for c2.Stats().Waiting != 1 {
		time.Sleep(time.Millisecond)
	}
	if st := c2.Stats(); st != (Stats{InUse: 1, Max: 1, Waiting: 1}) {
		t.Fatalf("stats with one scan waiting: %+v", st)
	}
	s2.Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiting scan: %v", err)
	}
	s1.Close()
	if st := c2.Stats(); st != (Stats{Max: 1}) {
		t.Fatalf("stats after every scan closed: %+v", st)
	}
}
