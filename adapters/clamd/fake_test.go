package clamd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testMarker is what the fake clamd detects: a stream that holds it is
// infected with testSignature.
const (
	testMarker    = "CAREBRIDGE-CLAMD-FAKE-MARKER-5f0c2e9a71d84b36a1e7c3d9b2f46e08"
	testSignature = "Carebridge.Test.FakeMarker-1"
	testVersion   = "ClamAV 1.4.6/27000/Mon Jun  2 08:00:00 2025"
	// closeWait bounds how long the fake waits for the client to close a
	// connection; only a leaked connection reaches it.
	closeWait = 10 * time.Second
)

// mode is what the fake clamd does with a connection.
type mode int

const (
	// behave answers as clamd: FOUND when the stream holds testMarker, OK
	// otherwise.
	behave mode = iota
	// closeMidStream closes the connection after the first chunk.
	closeMidStream
	// answerGarbage answers a NUL-terminated reply that is not clamd's.
	answerGarbage
	// answerUnterminated answers bytes without a NUL, then closes.
	answerUnterminated
	// answerFlood answers more than maxReply bytes without a NUL.
	answerFlood
	// answerError answers "... ERROR".
	answerError
	// sizeLimit answers the size-limit error once the stream passes
	// limit bytes and closes the connection at once, as clamd does.
	sizeLimit
	// neverAnswer reads the whole stream and answers nothing.
	neverAnswer
	// stopReading reads the first chunk, then nothing until the test ends.
	stopReading
)

// fakeClamd speaks clamd's protocol on a loopback TCP port or a unix
// socket in a temporary directory, checks the client's framing and
// records what it received.
type fakeClamd struct {
	t        *testing.T
	network  string
	address  string
	ln       net.Listener
	maxChunk int
	limit    int
	modeOf   func(i int) mode // the mode of the i-th connection, from 0

	idle     chan struct{} // closed when a stopReading or neverAnswer connection went quiet
	idleOnce sync.Once
	done     chan struct{} // closed when the test ends
	wg       sync.WaitGroup
	accepted atomic.Int64

	mu      sync.Mutex
	streams [][]byte // the streams received up to their end, in order
	chunks  []int    // the length of every chunk received
}

// startFake starts a fake clamd; every connection gets modeOf(i). It stops
// when the test ends, after every connection ended.
func startFake(t *testing.T, network string, modeOf func(i int) mode) *fakeClamd {
	t.Helper()
	f := &fakeClamd{
		t: t, network: network, maxChunk: 1000, limit: 64 << 10, modeOf: modeOf,
		idle: make(chan struct{}), done: make(chan struct{}),
	}
	var err error
	switch network {
	case "tcp":
		f.ln, err = net.Listen("tcp", "127.0.0.1:0")
	case "unix":
		f.ln, err = net.Listen("unix", filepath.Join(t.TempDir(), "clamd.sock"))
	}
	if err != nil {
		t.Fatal(err)
	}
	f.address = f.ln.Addr().String()
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.stop)
	return f
}

// always is a modeOf: every connection gets m.
func always(m mode) func(int) mode { return func(int) mode { return m } }

// first is a modeOf: the first connection gets m, the others behave.
func first(m mode) func(int) mode {
	return func(i int) mode {
		if i == 0 {
			return m
		}
		return behave
	}
}

func (f *fakeClamd) stop() {
	_ = f.ln.Close()
	close(f.done)
	f.wg.Wait()
}

// config is a client configuration for this fake with short time-outs.
func (f *fakeClamd) config() Config {
	return Config{
		Network: f.network, Address: f.address,
		DialTimeout: 5 * time.Second, IOTimeout: 5 * time.Second, VerdictTimeout: 5 * time.Second,
		MaxConns: 1, ChunkSize: f.maxChunk,
	}
}

func (f *fakeClamd) accept() {
	defer f.wg.Done()
	for i := 0; ; i++ {
		conn, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepted.Add(1)
		f.wg.Add(1)
		go f.serve(conn, f.modeOf(i))
	}
}

func (f *fakeClamd) serve(conn net.Conn, m mode) {
	defer f.wg.Done()
	defer conn.Close()
	cmd, err := readCommand(conn)
	if err != nil {
		f.t.Errorf("fake clamd: read command: %v", err)
		return
	}
	switch cmd {
	case "zPING":
		if !f.answer(conn, m, "PONG") {
			return
		}
	case "zVERSION":
		if !f.answer(conn, m, testVersion) {
			return
		}
	case "zINSTREAM":
		if !f.instream(conn, m) {
			return
		}
	default:
		f.t.Errorf("fake clamd: unknown command %q", cmd)
		return
	}
	f.awaitClose(conn)
}

// readCommand reads a NUL-terminated command.
func readCommand(conn net.Conn) (string, error) {
	var cmd []byte
	var b [1]byte
	for len(cmd) < 64 {
		if _, err := io.ReadFull(conn, b[:]); err != nil {
			return "", err
		}
		if b[0] == 0 {
			return string(cmd), nil
		}
		cmd = append(cmd, b[0])
	}
	return "", errors.New("command too long")
}

// instream receives a stream and answers as m says; false when the fake
// closed the connection itself (or the client went away).
func (f *fakeClamd) instream(conn net.Conn, m mode) bool {
	var stream []byte
	for n := 0; ; n++ {
		var hdr [4]byte
		if _, err := io.ReadFull(conn, hdr[:]); err != nil {
			return false // the client went away mid-stream
		}
		size := int(binary.BigEndian.Uint32(hdr[:]))
		f.mu.Lock()
		f.chunks = append(f.chunks, size)
		f.mu.Unlock()
		if size > f.maxChunk {
			f.t.Errorf("fake clamd: chunk of %d bytes, more than ChunkSize %d", size, f.maxChunk)
			return false
		}
		if size == 0 {
			break
		}
		chunk := make([]byte, size)
		if _, err := io.ReadFull(conn, chunk); err != nil {
			return false
		}
		stream = append(stream, chunk...)
		switch {
		case m == closeMidStream:
			return false
		case m == stopReading:
			f.quiet()
			<-f.done
			f.awaitClose(conn)
			return false
		case m == sizeLimit && len(stream) > f.limit:
			_, _ = io.WriteString(conn, sizeLimitReply+"\x00")
			return false
		}
	}
	f.mu.Lock()
	f.streams = append(f.streams, stream)
	f.mu.Unlock()
	reply := "stream: OK"
	if bytes.Contains(stream, []byte(testMarker)) {
		reply = "stream: " + testSignature + " FOUND"
	}
	return f.answer(conn, m, reply)
}

// answer sends reply, or what m sends instead; false when the fake closed
// the connection itself.
func (f *fakeClamd) answer(conn net.Conn, m mode, reply string) bool {
	switch m {
	case answerGarbage:
		reply = "HTTP/1.1 400 Bad Request"
	case answerError:
		reply = "stream: Can't allocate memory ERROR"
	case answerUnterminated:
		_, _ = io.WriteString(conn, "stream: O")
		return false
	case answerFlood:
		_, _ = io.WriteString(conn, strings.Repeat("A", 2*maxReply))
		return false
	case neverAnswer:
		f.quiet()
		return true
	}
	_, _ = io.WriteString(conn, reply+"\x00")
	return true
}

// quiet tells the test that a connection stopped reading or will not
// answer.
func (f *fakeClamd) quiet() { f.idleOnce.Do(func() { close(f.idle) }) }

// awaitClose waits for the client to close conn, and reports a client
// that never does.
func (f *fakeClamd) awaitClose(conn net.Conn) {
	_ = conn.SetReadDeadline(time.Now().Add(closeWait))
	_, err := io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		f.t.Errorf("fake clamd: the client left a connection open for %s", closeWait)
	}
}

// received returns the streams received whole and every chunk's length.
func (f *fakeClamd) received() ([][]byte, []int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.streams...), append([]int(nil), f.chunks...)
}

// checkNothingLeft fails the test when, once the test and the cleanups
// registered after this call are over, more goroutines run or more file
// descriptors are open (where /proc/self/fd tells) than before it: a
// connection the client did not close shows here even when the fake
// closed its end first. Call it first, before startFake.
func checkNothingLeft(t *testing.T) {
	warmUp.Do(func() {
		// The runtime opens its network poller's descriptors at the first
		// use, once: not a leak of the first test.
		if ln, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			_ = ln.Close()
		}
	})
	goroutines, fds := runtime.NumGoroutine(), openFDs()
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for runtime.NumGoroutine() > goroutines || openFDs() > fds {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines (%d before) and %d descriptors (%d before) left:\n%s",
					runtime.NumGoroutine(), goroutines, openFDs(), fds, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

var warmUp sync.Once

// openFDs counts the process's open file descriptors; 0 where
// /proc/self/fd is missing.
func openFDs() int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(entries)
}
