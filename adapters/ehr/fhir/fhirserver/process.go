package fhirserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The Node.js process that runs the server, and what it wrote.

var (
	nodeFlagOnce sync.Once
	nodeFlag     bool
)

// nodeNeedsWebSocketFlag reports whether node is older than 22, where the
// WebSocket global that @medplum/core touches needs --experimental-websocket.
func nodeNeedsWebSocketFlag(node string) bool {
	nodeFlagOnce.Do(func() {
		out, err := exec.Command(node, "--version").Output()
		if err != nil {
			nodeFlag = true
			return
		}
		v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
		major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
		nodeFlag = err != nil || major < 22
	})
	return nodeFlag
}

// process is a running server.mjs.
type process struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser // the server exits when this closes
	out   *limitedBuffer
	done  chan struct{} // closed when the process has exited
	err   error         // its exit status, set before done closes
}

// launch starts node with args and waits for the "listening 127.0.0.1:PORT"
// line; it returns the address.
func launch(ctx context.Context, node string, args []string, dir string, env []string) (*process, string, error) {
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.SysProcAttr = sysProcAttr()
	out := &limitedBuffer{max: maxOutput}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	p := &process{cmd: cmd, stdin: stdin, out: out, done: make(chan struct{})}

	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		if err == nil {
			lines <- strings.TrimSpace(line)
		}
		close(lines)
		io.Copy(out, r) // the rest goes with stderr, and drains the pipe
		// Wait only after stdout is read to its end, as StdoutPipe asks.
		p.err = cmd.Wait()
		close(p.done)
	}()

	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening ")
		if ok && found && addr != "" {
			return p, addr, nil
		}
		p.stop()
		return nil, "", fmt.Errorf("unexpected first line %q: %v\n%s", line, p.err, out.String())
	case <-timer.C:
		p.stop()
		return nil, "", fmt.Errorf("not listening within %s\n%s", readyTimeout, out.String())
	case <-ctx.Done():
		p.stop()
		return nil, "", ctx.Err()
	}
}

// stop closes the server's stdin and signals its process group, waits for
// it to exit, and kills the group if it does not in time. It reports an
// exit that was not asked for.
func (p *process) stop() error {
	select {
	case <-p.done:
		return fmt.Errorf("the server had already exited: %v", p.err)
	default:
	}
	p.stdin.Close()
	signalGroup(p.cmd, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	select {
	case <-p.done:
	case <-ctx.Done():
		signalGroup(p.cmd, syscall.SIGKILL)
		<-p.done
	}
	// Whatever else the server started in its group goes too.
	if err := signalGroup(p.cmd, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// limitedBuffer keeps the first max bytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
