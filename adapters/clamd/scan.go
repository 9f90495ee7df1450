package clamd

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core/storage"
)

var (
	errAfterVerdict = errors.New("clamd scan: write after the verdict")
	errClosed       = errors.New("clamd scan: closed")
)

// Scan opens a connection to clamd (waiting, within ctx, while MaxConns
// scans are open) and starts an INSTREAM. The scan belongs to ctx: when
// ctx ends, its connection closes and its Write or Verdict fails. The
// caller must Close it.
func (c *Client) Scan(ctx context.Context) (storage.Scan, error) {
	if err := c.acquire(ctx); err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx)
	if err != nil {
		c.release()
		return nil, err
	}
	s := &scan{c: c, ctx: ctx, conn: conn}
	s.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
	_ = conn.SetWriteDeadline(time.Now().Add(c.cfg.IOTimeout))
	if _, err := io.WriteString(conn, "zINSTREAM\x00"); err != nil {
		return nil, s.writeFailed("start INSTREAM", err)
	}
	return s, nil
}

// scan is one INSTREAM. Write and Verdict are for one goroutine; Close may
// come from any, at any time.
type scan struct {
	c    *Client
	ctx  context.Context // the Scan's: Write and Verdict have none of their own
	conn net.Conn
	stop func() bool // unregisters the AfterFunc that closes conn with ctx

	hdr   [4]byte
	ended bool   // Verdict was called
	sig   string // the verdict
	err   error  // the failure that ended the scan, returned again

	once   sync.Once
	closed atomic.Bool
}

// Write sends p as chunks of at most ChunkSize bytes, each within
// IOTimeout. An empty p sends nothing (a zero-length chunk would end the
// stream). After a failure the scan is over: every later call fails the
// same way.
func (s *scan) Write(p []byte) (int, error) {
	switch {
	case s.err != nil:
		return 0, s.err
	case s.ended:
		return 0, unavailable(errAfterVerdict)
	case s.closed.Load():
		return 0, unavailable(errClosed)
	}
	n := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), s.c.cfg.ChunkSize)]
		w, err := s.send(chunk)
		n += max(0, int(w)-len(s.hdr))
		if err != nil {
			return n, s.writeFailed("write chunk", err)
		}
		p = p[len(chunk):]
	}
	return n, nil
}

// send writes one chunk, its length first, within IOTimeout.
func (s *scan) send(chunk []byte) (int64, error) {
	binary.BigEndian.PutUint32(s.hdr[:], uint32(len(chunk)))
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.c.cfg.IOTimeout))
	bufs := net.Buffers{s.hdr[:], chunk}
	return bufs.WriteTo(s.conn)
}

// Verdict ends the stream and waits up to VerdictTimeout for clamd's
// answer. It closes the scan; calling it again returns the same answer.
func (s *scan) Verdict() (string, error) {
	if s.ended || s.err != nil {
		return s.sig, s.err
	}
	s.ended = true
	if s.closed.Load() {
		s.err = unavailable(errClosed)
		return "", s.err
	}
	if _, err := s.send(nil); err != nil {
		return "", s.writeFailed("end the stream", err)
	}
	_ = s.conn.SetReadDeadline(time.Now().Add(s.c.cfg.VerdictTimeout))
	reply, err := readReply(s.conn)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) && s.ctx.Err() == nil {
			err = fmt.Errorf("no verdict within %s: %w", s.c.cfg.VerdictTimeout, err)
		}
		return "", s.fail("read the verdict", err)
	}
	sig, err := parseReply(reply)
	if err != nil {
		return "", s.fail("verdict", err)
	}
	s.sig = sig
	_ = s.Close()
	return sig, nil
}

// writeFailed ends the scan after a failed write. clamd closes the
// connection when the stream passes its StreamMaxLength, after answering
// why: unless the write timed out or ctx ended, read that answer and
// report it rather than the broken pipe.
func (s *scan) writeFailed(op string, err error) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return s.fail(op, fmt.Errorf("clamd took nothing for %s: %w", s.c.cfg.IOTimeout, err))
	}
	if s.ctx.Err() == nil && !s.closed.Load() {
		_ = s.conn.SetReadDeadline(time.Now().Add(s.c.cfg.IOTimeout))
		if reply, rerr := readReply(s.conn); rerr == nil {
			if _, perr := parseReply(reply); perr != nil {
				return s.fail(op, fmt.Errorf("%w (%w)", perr, err))
			}
			// A verdict on part of a stream is none.
		}
	}
	return s.fail(op, err)
}

// fail ends the scan with cause: it closes the scan and remembers the
// error for every later call.
func (s *scan) fail(op string, cause error) error {
	s.err = unavailable(fmt.Errorf("clamd scan: %s: %w", op, withContext(s.ctx, cause)))
	_ = s.Close()
	return s.err
}

// Close closes the connection and frees the scan's slot, once.
func (s *scan) Close() error {
	var err error
	s.once.Do(func() {
		s.closed.Store(true)
		s.stop()
		if cerr := s.conn.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = unavailable(fmt.Errorf("close clamd connection: %w", cerr))
		}
		s.c.release()
	})
	return err
}
