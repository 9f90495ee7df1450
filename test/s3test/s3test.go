// Package s3test starts a real S3-compatible server, versitygw, for tests and
// benchmarks. The binary comes from the environment variable VERSITYGW_BIN
// (`make test` sets it from scripts/install-versitygw.sh); without it the
// test is skipped, or fails when CI is set.
//
//	cfg := s3test.Start(t)          // s3.Config for the adapter
//	url := cfg.ConnectionString()   // CLOUD_STORAGE_CONNECTION_STRING for the app
package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/test/testenv"
)

// EnvBin names the environment variable that holds the versitygw binary.
const EnvBin = "VERSITYGW_BIN"

const (
	healthPath   = "/health"
	readyTimeout = 30 * time.Second
	stopTimeout  = 10 * time.Second
	maxOutput    = 64 << 10
)

// Start starts versitygw with a posix backend in a temporary directory, on
// a free 127.0.0.1 port with random root keys, waits until it answers, and
// stops it when the test ends. It returns the config to reach it: plain
// http, region us-east-1, no bucket prefix. Every call starts a new server.
//
// The posix backend keeps metadata in extended attributes; where the
// temporary directory's file system has none, Start falls back to a
// sidecar metadata directory.
func Start(t testing.TB) s3.Config {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		missing(t)
	}
	return startServer(t, bin, false)
}

// missing ends a test that needs the server when EnvBin is unset.
func missing(t testing.TB) {
	t.Helper()
	testenv.Missing(t, "S3 server: "+EnvBin+" not set", "run make test, which installs it (scripts/install-versitygw.sh)")
}

// startServer starts bin, keeping metadata in a sidecar directory from the
// start when sidecar is set.
func startServer(t testing.TB, bin string, sidecar bool) s3.Config {
	t.Helper()
	dir := t.TempDir()
	data, meta := makeDirs(t, dir)
	cfg := s3.Config{
		Region:    s3.DefaultRegion,
		AccessKey: "CB" + rand.Text()[:18],
		SecretKey: rand.Text() + rand.Text()[:14],
	}

	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatalf("s3test: find a free port: %v", err)
		}
		srv, err := launch(bin, serverArgs(cfg, addr, data, meta, sidecar), dir)
		if err != nil {
			t.Fatalf("s3test: start %s: %v", bin, err)
		}
		err = srv.waitReady(addr)
		if err == nil {
			stopAtCleanup(t, srv)
			cfg.Endpoint = addr
			return cfg
		}
		srv.stop()
		out := srv.out.String()
		switch {
		case !sidecar && strings.Contains(out, "xattr"):
			sidecar = true // no extended attributes here: keep metadata aside
		case attempt < 3 && strings.Contains(out, "address already in use"):
			// Someone took the port between freeAddr and the listen.
		default:
			t.Fatalf("s3test: versitygw did not come up: %v\n%s", err, out)
		}
	}
}

// makeDirs makes in dir the directories of the posix backend: data for
// the objects, meta for the sidecar metadata.
func makeDirs(t testing.TB, dir string) (data, meta string) {
	t.Helper()
	data = filepath.Join(dir, "data")
	meta = filepath.Join(dir, "meta")
	for _, d := range []string{data, meta} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatalf("s3test: %v", err)
		}
	}
	return data, meta
}

// serverArgs are versitygw's arguments: cfg's keys and region, listening
// on addr, a posix backend in data, with metadata in meta when sidecar is
// set.
func serverArgs(cfg s3.Config, addr, data, meta string, sidecar bool) []string {
	args := []string{
		"--access", cfg.AccessKey, "--secret", cfg.SecretKey,
		"--port", addr, "--region", cfg.Region,
		"--health", healthPath, "--quiet",
		"posix",
	}
	if sidecar {
		args = append(args, "--sidecar", meta)
	}
	return append(args, data)
}

// stopAtCleanup stops srv when the test ends.
func stopAtCleanup(t testing.TB, srv *server) {
	t.Cleanup(func() {
		// versitygw's graceful shutdown waits for the clients' idle
		// keep-alive connections, which a loaded machine may hold past the
		// time-out; it is then killed. That says nothing of the code under
		// test, so it is logged, not failed.
		if err := srv.stop(); err != nil {
			t.Logf("s3test: stop versitygw: %v\n%s", err, srv.out.String())
		}
	})
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// server is a running versitygw process.
type server struct {
	cmd  *exec.Cmd
	out  *limitedBuffer
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, set before done closes
}

// launch starts bin with args in dir.
func launch(bin string, args []string, dir string) (*server, error) {
	cmd := exec.Command(bin, args...)
	// A clean environment: no VGW_* or ROOT_* variable of the caller's
	// changes the server.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Dir = dir
	out := &limitedBuffer{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	return s, nil
}

// waitReady polls the health endpoint until it answers 200.
func (s *server) waitReady(addr string) error {
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	url := "http://" + addr + healthPath
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.done:
			return fmt.Errorf("exited: %v", s.err)
		case <-ctx.Done():
			return fmt.Errorf("no answer on %s within %s", url, readyTimeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop interrupts the server, kills it when it lingers, and waits for it.
func (s *server) stop() error {
	select {
	case <-s.done:
		return nil
	default:
	}
	if err := s.cmd.Process.Signal(os.Interrupt); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.cmd.Process.Kill()
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(stopTimeout):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("still running %s after interrupt; killed", stopTimeout)
	}
}

// limitedBuffer keeps the first max bytes written to it; it is safe for
// concurrent use.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
