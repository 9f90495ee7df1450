// Package clamdtest starts a real ClamAV daemon, clamd, for tests and
// benchmarks, with a signature database of its own: the EICAR test string
// (SigEICAR) and the hash of a generated file (SigGenerated) — no network,
// no freshclam. The launcher comes from the environment variable CLAMD_BIN
// (`make test` sets it from scripts/install-clamd.sh); without it the test
// is skipped, or fails when CI is set.
//
//	d := clamdtest.Start(t)
//	addr := d.Address()      // tcp://127.0.0.1:port, for CLAMD_ADDRESS
//	sock := d.UnixAddress()  // unix:///tmp/…/clamd.sock
//	d.Stop()                 // clamd dies, as in a crash
//	d.Restart()              // and comes back on the same sockets
package clamdtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/test/testenv"
)

// EnvBin names the environment variable that holds the clamd launcher.
const EnvBin = "CLAMD_BIN"

// DefaultStreamMaxLength is the largest stream (INSTREAM) clamd accepts
// unless Options say otherwise: 4000 MiB, above any upload the service
// accepts. clamd scans at most 2 GiB - 1 of a single file whatever its
// limits say (it logs a warning about MaxFileSize at start).
const DefaultStreamMaxLength = 4000 << 20

const (
	readyTimeout = 30 * time.Second
	pollEvery    = 20 * time.Millisecond
	maxLog       = 16 << 10 // how much of clamd's log a failure quotes
	sockName     = "clamd.sock"
)

// Options change the daemon Start runs.
type Options struct {
	// StreamMaxLength is the largest stream clamd accepts, in bytes; past
	// it clamd answers "INSTREAM size limit exceeded. ERROR" and closes
	// the connection. Zero means DefaultStreamMaxLength.
	StreamMaxLength int64
}

// Daemon is a running clamd. Its methods are safe for concurrent use.
type Daemon struct {
	t       testing.TB
	bin     string
	dir     string // the config, database, logs and temporary files
	conf    string
	sock    string // the unix socket's path
	tcpAddr string // 127.0.0.1:port

	mu   sync.Mutex
	proc *process // nil while stopped
}

// Start starts clamd with the default Options; see StartWith.
func Start(t testing.TB) *Daemon {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith starts clamd in the foreground with a signature database of
// its own, listening on a unix socket in a short temporary directory and
// on a free 127.0.0.1 port, waits until it answers PING, and kills it when
// the test ends. Every call starts a new daemon.
func StartWith(t testing.TB, opts Options) *Daemon {
	t.Helper()
	bin := os.Getenv(EnvBin)
	if bin == "" {
		testenv.Missing(t, "ClamAV daemon: "+EnvBin+" not set",
			"run make test, which installs it, or export "+EnvBin+"=$(bash scripts/install-clamd.sh)")
	}
	if opts.StreamMaxLength == 0 {
		opts.StreamMaxLength = DefaultStreamMaxLength
	}

	d := &Daemon{t: t, bin: bin, dir: t.TempDir()}
	db := filepath.Join(d.dir, "db")
	tmp := filepath.Join(d.dir, "tmp")
	for _, dir := range []string{db, tmp} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatalf("clamdtest: %v", err)
		}
	}
	if err := writeDatabase(db); err != nil {
		t.Fatalf("clamdtest: write the signature database: %v", err)
	}
	d.sock = filepath.Join(socketDir(t), sockName)
	d.conf = filepath.Join(d.dir, "clamd.conf")
	t.Cleanup(func() { d.kill() })

	for attempt := 1; ; attempt++ {
		addr, err := freeAddr()
		if err != nil {
			t.Fatalf("clamdtest: find a free port: %v", err)
		}
		d.tcpAddr = addr
		if err := os.WriteFile(d.conf, config(d, db, tmp, opts), 0o600); err != nil {
			t.Fatalf("clamdtest: %v", err)
		}
		err = d.start()
		if err == nil {
			return d
		}
		// Someone may have taken the port between freeAddr and the bind.
		if attempt < 3 && strings.Contains(err.Error(), "Address already in use") {
			continue
		}
		t.Fatalf("clamdtest: %v", err)
	}
}

// socketDir makes a directory for the unix socket and removes it when the
// test ends. t.TempDir's paths, named after the test, can pass the 108
// bytes a socket path may have; this one is short.
func socketDir(t testing.TB) string {
	t.Helper()
	base := os.TempDir()
	if len(base) > 64 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "clamd")
	if err != nil {
		t.Fatalf("clamdtest: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// config is clamd's configuration: in the foreground, both sockets, the
// database in db and nothing else (no reload thread, no self check), the
// stream and scan limits of opts, temporary files and the log in d.dir.
func config(d *Daemon, db, tmp string, opts Options) []byte {
	host, port, _ := net.SplitHostPort(d.tcpAddr)
	limit := strconv.FormatInt(opts.StreamMaxLength, 10)
	scan := strconv.FormatInt(max(opts.StreamMaxLength, DefaultStreamMaxLength), 10)
	lines := []string{
		"Foreground yes",
		"LocalSocket " + d.sock,
		"LocalSocketMode 600",
		"TCPSocket " + port,
		"TCPAddr " + host,
		"DatabaseDirectory " + db,
		"TemporaryDirectory " + tmp,
		"LogFile " + filepath.Join(d.dir, "clamd.log"),
		"LogFileMaxSize 1M",
		"LogTime yes",
		"StreamMaxLength " + limit,
		"MaxFileSize " + scan,
		"MaxScanSize " + scan,
		"ConcurrentDatabaseReload no",
		"SelfCheck 0",
	}
	return []byte(strings.Join(lines, "\n") + "\n")
}

// Address is clamd's TCP address as CLAMD_ADDRESS takes it:
// tcp://127.0.0.1:port.
func (d *Daemon) Address() string { return "tcp://" + d.tcpAddr }

// UnixAddress is clamd's unix socket as CLAMD_ADDRESS takes it:
// unix:///path/clamd.sock.
func (d *Daemon) UnixAddress() string { return "unix://" + d.sock }

// SocketPath is the path of clamd's unix socket.
func (d *Daemon) SocketPath() string { return d.sock }

// PID is the process id of the running clamd (for a bench that reads its
// CPU time and memory), or 0 while it is stopped.
func (d *Daemon) PID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc == nil {
		return 0
	}
	return d.proc.cmd.Process.Pid
}

// Stop kills clamd at once (SIGKILL), as a crash would: connections in
// flight are cut, and nothing listens on its sockets until Restart. It
// does nothing when clamd is stopped already.
func (d *Daemon) Stop() {
	d.kill()
}

// Restart stops clamd when it runs and starts it again with the same
// sockets, database and limits, waiting until it answers PING; it fails
// the test when clamd does not come back.
func (d *Daemon) Restart() {
	d.t.Helper()
	d.kill()
	if err := d.start(); err != nil {
		d.t.Fatalf("clamdtest: restart: %v", err)
	}
}

// start launches clamd and waits until it answers PING on both sockets.
func (d *Daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc != nil {
		return errors.New("clamd is running already")
	}
	// A socket file left by a killed clamd would make it refuse to start
	// if something still answered there; nothing does, so it is removed.
	os.Remove(d.sock)
	p, err := launch(d.bin, d.conf, d.dir)
	if err != nil {
		return fmt.Errorf("start %s: %w", d.bin, err)
	}
	if err := p.waitReady(d.sock, d.tcpAddr); err != nil {
		p.kill()
		return fmt.Errorf("clamd did not come up: %v\n%s", err, d.logs())
	}
	d.proc = p
	return nil
}

// kill kills clamd when it runs and waits for it.
func (d *Daemon) kill() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.proc == nil {
		return
	}
	d.proc.kill()
	d.proc = nil
	os.Remove(d.sock)
}

// logs returns the tail of clamd's log file and of its output.
func (d *Daemon) logs() string {
	var b strings.Builder
	for _, name := range []string{"clamd.log", "output.log"} {
		fmt.Fprintf(&b, "--- %s:\n%s\n", name, tail(filepath.Join(d.dir, name), maxLog))
	}
	return b.String()
}

// tail returns the last n bytes of the file at path.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
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

// process is one run of clamd.
type process struct {
	cmd  *exec.Cmd
	out  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // its exit status, set before done closes
}

// launch starts clamd with the config file conf; its output goes to
// output.log in dir.
func launch(bin, conf, dir string) (*process, error) {
	out, err := os.OpenFile(filepath.Join(dir, "output.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config-file="+conf)
	// A clean environment: nothing of the caller's changes the daemon.
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		out.Close()
		return nil, err
	}
	p := &process{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		out.Close()
		close(p.done)
	}()
	return p, nil
}

// waitReady waits until clamd answers PING on the unix socket at sock and
// on tcpAddr, until it exits, or until readyTimeout.
func (p *process) waitReady(sock, tcpAddr string) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		errUnix := ping("unix", sock)
		errTCP := ping("tcp", tcpAddr)
		if errUnix == nil && errTCP == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited: %v", p.err)
		case <-time.After(pollEvery):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG within %s: unix: %v; tcp: %v", readyTimeout, errUnix, errTCP)
		}
	}
}

// ping sends zPING on a new connection and expects PONG.
func ping(network, addr string) error {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("zPING\x00")); err != nil {
		return err
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		return err
	}
	if !bytes.Equal(reply, []byte("PONG\x00")) {
		return fmt.Errorf("PING answered %q", reply)
	}
	return nil
}

// kill kills the process and waits for it.
func (p *process) kill() {
	p.cmd.Process.Kill()
	<-p.done
}
