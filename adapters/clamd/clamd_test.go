package clamd

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

var networks = []string{"tcp", "unix"}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// wantUnavailable checks that err is scanner_unavailable and, unless
// cause is nil, wraps cause.
func wantUnavailable(t *testing.T, err, cause error) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code != "scanner_unavailable" || ce.Kind != core.KindUnavailable ||
		!errors.Is(err, storage.ErrScannerUnavailable) {
		t.Fatalf("err = %v, want scanner_unavailable", err)
	}
	if cause != nil && !errors.Is(err, cause) {
		t.Fatalf("err = %v, want it to wrap %v", err, cause)
	}
}

// scanAll streams data in writes of size step and returns the verdict.
// The writes' errors must be the verdict's (a failed scan stays failed).
func scanAll(t *testing.T, c *Client, ctx context.Context, data []byte, step int) (string, error) {
	t.Helper()
	s, err := c.Scan(ctx)
	if err != nil {
		return "", err
	}
	defer s.Close()
	var werr error
	for len(data) > 0 && werr == nil {
		n := min(step, len(data))
		var w int
		w, werr = s.Write(data[:n])
		if werr == nil && w != n {
			t.Fatalf("Write wrote %d of %d bytes and no error", w, n)
		}
		data = data[n:]
	}
	sig, err := s.Verdict()
	if werr != nil && err != werr {
		t.Fatalf("Write failed with %v, then Verdict with %v", werr, err)
	}
	return sig, err
}

// pattern is n bytes that differ from chunk to chunk.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func TestScan_FramesTheStreamInChunks(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			checkNothingLeft(t)
			f := startFake(t, network, always(behave))
			c := newClient(t, f.config())
			s, err := c.Scan(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var sent []byte
			// Around and across the chunk size (1000), and an empty write,
			// which must not end the stream.
			for _, size := range []int{1, 0, 999, 1000, 1001, 3007, 0, 2000, 5} {
				p := pattern(size + len(sent))[len(sent):]
				n, err := s.Write(p)
				if err != nil || n != size {
					t.Fatalf("Write(%d bytes) = %d, %v", size, n, err)
				}
				sent = append(sent, p...)
			}
			sig, err := s.Verdict()
			if err != nil || sig != "" {
				t.Fatalf("Verdict = %q, %v; want clean", sig, err)
			}
			streams, chunks := f.received()
			if len(streams) != 1 || !bytes.Equal(streams[0], sent) {
				t.Fatalf("clamd received %d streams, want the %d bytes written", len(streams), len(sent))
			}
			// 1 | 999 | 1000 | 1000 1 | 1000 1000 1000 7 | 1000 1000 | 5 | end
			want := []int{1, 999, 1000, 1000, 1, 1000, 1000, 1000, 7, 1000, 1000, 5, 0}
			if !equalInts(chunks, want) {
				t.Fatalf("chunks %v, want %v", chunks, want)
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestScan_Verdicts(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			checkNothingLeft(t)
			f := startFake(t, network, always(behave))
			c := newClient(t, f.config())

			clean := pattern(10_000)
			if sig, err := scanAll(t, c, t.Context(), clean, 4096); err != nil || sig != "" {
				t.Fatalf("clean file: %q, %v", sig, err)
			}
			// The marker straddles a chunk boundary.
			infected := append(append(pattern(990), testMarker...), pattern(3000)...)
			if sig, err := scanAll(t, c, t.Context(), infected, 4096); err != nil || sig != testSignature {
				t.Fatalf("infected file: %q, %v; want %q", sig, err, testSignature)
			}
			if sig, err := scanAll(t, c, t.Context(), nil, 1); err != nil || sig != "" {
				t.Fatalf("empty file: %q, %v", sig, err)
			}
		})
	}
}

func TestScan_VerdictTwiceAndCloseTwice(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", always(behave))
	c := newClient(t, f.config()) // MaxConns 1
	s, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write([]byte(testMarker)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if sig, err := s.Verdict(); err != nil || sig != testSignature {
			t.Fatalf("Verdict = %q, %v", sig, err)
		}
	}
	if _, err := s.Write([]byte("more")); err == nil {
		t.Fatal("Write after Verdict succeeded")
	} else {
		wantUnavailable(t, err, errAfterVerdict)
	}
	for range 2 {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The slot came back once: one scan opens, a second one waits.
	s1, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := c.Scan(ctx); err == nil {
		t.Fatal("a second scan opened with MaxConns 1")
	} else {
		wantUnavailable(t, err, context.DeadlineExceeded)
	}
}

func TestScan_AfterClose(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "unix", always(behave))
	c := newClient(t, f.config())
	s, err := c.Scan(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = s.Write([]byte("x"))
	wantUnavailable(t, err, errClosed)
	_, err = s.Verdict()
	wantUnavailable(t, err, errClosed)
}

// Every fault ends as scanner_unavailable with its cause, leaves no
// goroutine and no connection behind, and frees the slot: with MaxConns 1
// the next scan on the same client works.
func TestScan_Faults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  mode
		cause error
		cfg   func(*Config)
	}{
		{name: "closed mid-stream", mode: closeMidStream},
		{name: "garbage", mode: answerGarbage, cause: errGarbage},
		{name: "unterminated", mode: answerUnterminated, cause: errNoReply},
		{name: "flood", mode: answerFlood, cause: errGarbage},
		{name: "error", mode: answerError, cause: errDaemon},
		{name: "size limit", mode: sizeLimit, cause: ErrStreamTooLong},
		{name: "no verdict", mode: neverAnswer, cause: os.ErrDeadlineExceeded,
			cfg: func(c *Config) { c.VerdictTimeout = 100 * time.Millisecond }},
		{name: "stops reading", mode: stopReading, cause: os.ErrDeadlineExceeded,
			cfg: func(c *Config) { c.IOTimeout = 100 * time.Millisecond }},
	} {
		for _, network := range networks {
			t.Run(tc.name+"/"+network, func(t *testing.T) {
				checkNothingLeft(t)
				f := startFake(t, network, first(tc.mode))
				cfg := f.config()
				if tc.cfg != nil {
					tc.cfg(&cfg)
				}
				c := newClient(t, cfg)
				// 4 MiB: more than the socket buffers hold and than the
				// fake's size limit (64 KiB).
				_, err := scanAll(t, c, t.Context(), pattern(4<<20), 64<<10)
				wantUnavailable(t, err, tc.cause)
				if n := len(c.slots); n != 0 {
					t.Fatalf("%d slots taken after the failure", n)
				}

				// The same client (the same slot), with the time-outs of a
				// loaded machine, scans again.
				c.cfg.IOTimeout, c.cfg.VerdictTimeout = 5*time.Second, 5*time.Second
				ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
				defer cancel()
				if sig, err := scanAll(t, c, ctx, []byte(testMarker), 100); err != nil || sig != testSignature {
					t.Fatalf("the next scan: %q, %v", sig, err)
				}
			})
		}
	}
}

func TestScan_Refused(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			checkNothingLeft(t)
			var address string
			switch network {
			case "tcp":
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				address = ln.Addr().String()
				_ = ln.Close()
			case "unix":
				address = filepath.Join(t.TempDir(), "absent.sock")
			}
			c := newClient(t, Config{Network: network, Address: address, MaxConns: 1})
			for range 2 { // the failed dial freed its slot
				_, err := c.Scan(t.Context())
				wantUnavailable(t, err, nil)
				var op *net.OpError
				if !errors.As(err, &op) || op.Op != "dial" {
					t.Fatalf("err = %v, want the dial's", err)
				}
			}
			wantUnavailable(t, c.Ping(t.Context()), nil)
		})
	}
}

// A ctx cancelled while Write waits on a clamd that stopped reading closes
// the connection: Write returns at once, long before IOTimeout.
func TestScan_CancelMidWrite(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			checkNothingLeft(t)
			f := startFake(t, network, first(stopReading))
			cfg := f.config()
			cfg.IOTimeout = time.Minute
			c := newClient(t, cfg)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			s, err := c.Scan(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			go func() {
				select {
				case <-f.idle:
					cancel()
				case <-ctx.Done():
				}
			}()
			block := pattern(1 << 20)
			for i := 0; ; i++ {
				if _, err = s.Write(block); err != nil {
					break
				}
				if i == 1024 {
					t.Fatal("1 GiB written to a clamd that does not read")
				}
			}
			wantUnavailable(t, err, context.Canceled)
			// The cancel closed the connection; Write did not wait for
			// IOTimeout.
			wantUnavailable(t, err, net.ErrClosed)
			_, verr := s.Verdict()
			if verr != err {
				t.Fatalf("Verdict after the failed write: %v", verr)
			}
			ctx2, cancel2 := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel2()
			if _, err := scanAll(t, c, ctx2, []byte("x"), 1); err != nil {
				t.Fatalf("the next scan: %v", err)
			}
		})
	}
}

// A ctx cancelled while clamd scans ends the wait for the verdict.
func TestScan_CancelWhileWaitingForVerdict(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", first(neverAnswer))
	cfg := f.config()
	cfg.VerdictTimeout = time.Minute
	c := newClient(t, cfg)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	s, err := c.Scan(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	go func() {
		select {
		case <-f.idle: // the stream ended there, no answer comes
			cancel(errors.New("the upload was abandoned"))
		case <-ctx.Done():
		}
	}()
	_, err = s.Verdict()
	wantUnavailable(t, err, context.Canceled)
	wantUnavailable(t, err, net.ErrClosed)
	if !strings.Contains(err.Error(), "the upload was abandoned") {
		t.Fatalf("err = %v, want the cancel's cause", err)
	}
}

func TestPingAndVersion(t *testing.T) {
	for _, network := range networks {
		t.Run(network, func(t *testing.T) {
			checkNothingLeft(t)
			f := startFake(t, network, always(behave))
			c := newClient(t, f.config())
			// Not counted in MaxConns: a scan is open meanwhile.
			s, err := c.Scan(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := c.Ping(t.Context()); err != nil {
				t.Fatal(err)
			}
			v, err := c.Version(t.Context())
			if err != nil || v != testVersion {
				t.Fatalf("Version = %q, %v", v, err)
			}
		})
	}
}

func TestPingAndVersion_Faults(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mode  mode
		cause error
	}{
		{"garbage", answerGarbage, errGarbage},
		{"error", answerError, errGarbage},
		{"unterminated", answerUnterminated, errNoReply},
		{"no answer", neverAnswer, os.ErrDeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkNothingLeft(t)
			f := startFake(t, "tcp", always(tc.mode))
			cfg := f.config()
			if tc.cause == os.ErrDeadlineExceeded {
				cfg.IOTimeout = 100 * time.Millisecond
			}
			c := newClient(t, cfg)
			wantUnavailable(t, c.Ping(t.Context()), tc.cause)
			_, err := c.Version(t.Context())
			wantUnavailable(t, err, tc.cause)
		})
	}
}

func TestPing_CancelledWhileWaiting(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "unix", always(neverAnswer))
	cfg := f.config()
	cfg.IOTimeout = time.Minute
	c := newClient(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		select {
		case <-f.idle: // PING arrived, no answer comes
			cancel()
		case <-ctx.Done():
		}
	}()
	err := c.Ping(ctx)
	wantUnavailable(t, err, context.Canceled)
	wantUnavailable(t, err, net.ErrClosed)
}

func TestNew(t *testing.T) {
	c, err := New(Config{Network: "unix", Address: "/run/clamav/clamd.ctl"})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Network: "unix", Address: "/run/clamav/clamd.ctl",
		DialTimeout: 5 * time.Second, IOTimeout: 30 * time.Second, VerdictTimeout: 120 * time.Second,
		MaxConns: 8, WaitTimeout: 10 * time.Second, ChunkSize: 64 << 10}
	if got := c.Config(); got != want {
		t.Fatalf("defaults: %+v, want %+v", got, want)
	}

	_, err = New(Config{Network: "udp", Address: "", IOTimeout: -1, MaxConns: -1, ChunkSize: MaxChunkSize + 1})
	if err == nil {
		t.Fatal("New accepted a bad configuration")
	}
	for _, part := range []string{"udp", "address", "IOTimeout", "MaxConns", "ChunkSize"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("New's error %q does not name %s", err, part)
		}
	}
}
