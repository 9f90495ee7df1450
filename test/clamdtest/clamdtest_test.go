package clamdtest_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/carebridge/carebridge/test/clamdtest"
)

// The clamd protocol spoken here is the raw one, so that these tests check
// the daemon and its database, not a client.

const ioTimeout = 30 * time.Second

// dial connects to addr, a tcp:// or unix:// address of the Daemon.
func dial(addr string) (net.Conn, error) {
	network, rest, _ := strings.Cut(addr, "://")
	c, err := net.DialTimeout(network, rest, 5*time.Second)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(ioTimeout))
	return c, nil
}

// command sends a z-command (zPING, zVERSION) and returns the whole reply.
func command(t *testing.T, addr, cmd string) string {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("z" + cmd + "\x00")); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	reply, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("%s: read: %v", cmd, err)
	}
	return string(reply)
}

// instream streams data to clamd (zINSTREAM) in chunks of chunk bytes and
// returns the reply and how the connection ended: nil for a clean close,
// or the error of the read that ended it. The chunks are written by a
// goroutine that ignores write errors, as clamd may answer and close
// before it has read all of them; the reply is read all the same.
func instream(t *testing.T, addr string, data []byte, chunk int) (reply string, end error) {
	t.Helper()
	c, err := dial(addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		if _, err := c.Write([]byte("zINSTREAM\x00")); err != nil {
			return
		}
		for rest := data; len(rest) > 0; {
			n := min(chunk, len(rest))
			var size [4]byte
			binary.BigEndian.PutUint32(size[:], uint32(n))
			if _, err := c.Write(append(size[:], rest[:n]...)); err != nil {
				return
			}
			rest = rest[n:]
		}
		c.Write([]byte{0, 0, 0, 0})
	}()
	b, end := io.ReadAll(c)
	c.Close()
	<-written
	return string(b), end
}

// scan is instream in 64 KiB chunks, failing the test unless clamd
// answered and closed the connection.
func scan(t *testing.T, addr string, data []byte) string {
	t.Helper()
	reply, end := instream(t, addr, data, 64<<10)
	if end != nil {
		t.Fatalf("INSTREAM of %d bytes: %v (after %q)", len(data), end, reply)
	}
	return reply
}

func TestIntegrationClamd_DetectsTheSignaturesOfItsDatabase(t *testing.T) {
	d := clamdtest.Start(t)
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), clamdtest.EICAR()...)
	changed := clamdtest.Generated()
	changed[len(changed)-1] ^= 1
	clean := bytes.Repeat([]byte("a clean referral letter, nothing to see\n"), 5000)

	for _, addr := range []string{d.Address(), d.UnixAddress()} {
		if got := command(t, addr, "PING"); got != "PONG\x00" {
			t.Errorf("%s PING: %q, want PONG", addr, got)
		}
		if got := command(t, addr, "VERSION"); !strings.HasPrefix(got, "ClamAV 1.") {
			t.Errorf("%s VERSION: %q, want ClamAV 1.x", addr, got)
		}
		for _, c := range []struct {
			name string
			data []byte
			want string
		}{
			{"EICAR", clamdtest.EICAR(), "stream: " + clamdtest.SigEICAR + " FOUND\x00"},
			{"EICAR inside a PNG", png, "stream: " + clamdtest.SigEICAR + " FOUND\x00"},
			{"Generated", clamdtest.Generated(), "stream: " + clamdtest.SigGenerated + " FOUND\x00"},
			{"Generated with one bit changed", changed, "stream: OK\x00"},
			{"clean text", clean, "stream: OK\x00"},
			{"empty", nil, "stream: OK\x00"},
		} {
			if got := scan(t, addr, c.data); got != c.want {
				t.Errorf("%s INSTREAM %s: %q, want %q", addr, c.name, got, c.want)
			}
		}
	}
}

func TestGenerated_IsTheSameEveryTime(t *testing.T) {
	a, b := clamdtest.Generated(), clamdtest.Generated()
	if len(a) != 4096 || !bytes.Equal(a, b) || !bytes.HasPrefix(a, []byte("%PDF-")) {
		t.Fatalf("Generated: %d bytes, equal twice: %v, PDF header: %q", len(a), bytes.Equal(a, b), a[:5])
	}
	a[0] = 'x'
	if clamdtest.Generated()[0] == 'x' {
		t.Fatal("Generated shares its bytes between calls")
	}
}

func TestIntegrationClamd_StopAndRestart(t *testing.T) {
	d := clamdtest.Start(t)
	addrs := []string{d.Address(), d.UnixAddress()}
	pid := d.PID()
	if pid == 0 {
		t.Fatal("PID of a running clamd: 0")
	}

	d.Stop()
	for _, addr := range addrs {
		if c, err := dial(addr); err == nil {
			c.Close()
			t.Errorf("dial %s after Stop: connected, want an error", addr)
		}
	}
	if got := d.PID(); got != 0 {
		t.Errorf("PID after Stop: %d, want 0", got)
	}
	d.Stop() // stopping a stopped daemon does nothing

	d.Restart()
	if d.Address() != addrs[0] || d.UnixAddress() != addrs[1] {
		t.Fatalf("addresses after Restart: %s %s, want %v", d.Address(), d.UnixAddress(), addrs)
	}
	if got := d.PID(); got == 0 || got == pid {
		t.Errorf("PID after Restart: %d, want a new process (was %d)", got, pid)
	}
	for _, addr := range addrs {
		if got := command(t, addr, "PING"); got != "PONG\x00" {
			t.Errorf("%s PING after Restart: %q, want PONG", addr, got)
		}
	}
	if got := scan(t, d.Address(), clamdtest.EICAR()); got != "stream: "+clamdtest.SigEICAR+" FOUND\x00" {
		t.Errorf("INSTREAM EICAR after Restart: %q", got)
	}

	d.Restart() // restarting a running daemon works too
	if got := command(t, d.UnixAddress(), "PING"); got != "PONG\x00" {
		t.Errorf("PING after a second Restart: %q, want PONG", got)
	}
}

// clamd checks the length of each chunk against StreamMaxLength before it
// reads the chunk: the chunk that would pass the limit is answered with
// "INSTREAM size limit exceeded. ERROR" and clamd closes the connection
// without reading the rest. The client's later writes may then fail
// (EPIPE, ECONNRESET) and its read may end in ECONNRESET after the reply,
// as the close discards what clamd had not read; the reply still arrives
// first. clamd itself goes on serving.
func TestIntegrationClamd_StreamMaxLength(t *testing.T) {
	const limit = 1 << 20
	d := clamdtest.StartWith(t, clamdtest.Options{StreamMaxLength: limit})
	const exceeded = "INSTREAM size limit exceeded. ERROR\x00"

	if got := scan(t, d.Address(), make([]byte, limit)); got != "stream: OK\x00" {
		t.Errorf("INSTREAM of exactly StreamMaxLength: %q, want OK", got)
	}
	for _, c := range []struct {
		name        string
		size, chunk int
	}{
		{"one byte over, 64 KiB chunks", limit + 1, 64 << 10},
		{"2 MiB in 64 KiB chunks", 2 << 20, 64 << 10},
		{"2 MiB in one chunk", 2 << 20, 2 << 20},
	} {
		for _, addr := range []string{d.Address(), d.UnixAddress()} {
			reply, end := instream(t, addr, make([]byte, c.size), c.chunk)
			if reply != exceeded {
				t.Errorf("%s %s: %q (then %v), want %q", addr, c.name, reply, end, exceeded)
			}
			if end != nil && !errors.Is(end, syscall.ECONNRESET) {
				t.Errorf("%s %s: the connection ended with %v, want a close or a reset", addr, c.name, end)
			}
		}
	}
	if got := command(t, d.Address(), "PING"); got != "PONG\x00" {
		t.Errorf("PING after the refusals: %q, want PONG", got)
	}
}
