// Package clamd is the storage.Scanner of the ClamAV daemon (CLAMD_ADDRESS):
// it streams each file to clamd with the INSTREAM command and reads the
// verdict when it ends. The storage core scans a file once it is stored,
// reading it back at the store's speed, so a connection is held for as long
// as a scan takes and never at the pace of a slow client.
//
// The protocol (docs.clamav.net, "clamd protocol"): every command is sent
// as "z<COMMAND>\x00" and answered by one NUL-terminated reply; clamd closes
// the connection after each command (no IDSESSION here), so every Scan,
// Ping and Version uses a connection of its own. INSTREAM's data goes as
// chunks, each preceded by its length as 4 bytes big-endian; a zero length
// ends the stream, and clamd answers "stream: OK", "stream: <signature>
// FOUND" or "<message> ERROR".
//
// Every exchange has a time-out (Config), and a Client keeps at most
// MaxConns scans open at once; a scan waits at most WaitTimeout for one of
// them (Stats shows how many are in use and waiting, RegisterStats the
// same as gauges). Metered counts a Scanner's scans by result and times
// their verdicts; Probe, for readiness, asks VERSION and logs the version
// when it changes. Every failure is storage.ErrScannerUnavailable wrapping
// its cause: an upload that cannot be scanned is refused (fail closed);
// one refused because every connection stayed busy carries a Retry-After.
//
// clamd.conf matters: clamd refuses a stream longer than its
// StreamMaxLength (default 25 MiB) with ErrStreamTooLong, so set it at least
// as large as MAX_UPLOAD_BYTES; and MaxConns should stay within clamd's
// MaxThreads (default 10) shared by every instance, or scans queue inside
// clamd, under VerdictTimeout.
package clamd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/storage"
)

// The defaults New applies to the zero fields of Config.
const (
	DefaultDialTimeout    = 5 * time.Second
	DefaultIOTimeout      = 30 * time.Second
	DefaultVerdictTimeout = 120 * time.Second
	DefaultMaxConns       = 8
	DefaultWaitTimeout    = 10 * time.Second
	DefaultChunkSize      = 64 << 10
	// MaxChunkSize is the largest ChunkSize New accepts.
	MaxChunkSize = 16 << 20
)

// Config says where clamd listens and how long to wait for it.
type Config struct {
	// Network is "tcp" or "unix" (see ParseAddress).
	Network string
	// Address is host:port for tcp, the socket's path for unix.
	Address string
	// DialTimeout bounds connecting (default 5s).
	DialTimeout time.Duration
	// IOTimeout bounds each write of a chunk, and Ping and Version as a
	// whole (default 30s): a clamd that stops reading fails the scan.
	IOTimeout time.Duration
	// VerdictTimeout bounds the wait for the verdict after the end of the
	// stream, while clamd scans the file (default 120s: a 200 MiB file
	// takes seconds, an archive more).
	VerdictTimeout time.Duration
	// MaxConns bounds the scans open at once (default 8); Scan waits for
	// a free one. Ping and Version are short and not counted, so that a
	// busy scanner still answers readiness checks.
	MaxConns int
	// WaitTimeout bounds Scan's wait for a free connection while MaxConns
	// scans are open (default 10s); past it the scan is refused as busy
	// (ErrScannerUnavailable with a Retry-After), so that a burst of
	// uploads gets a clear answer instead of a queue without end.
	WaitTimeout time.Duration
	// ChunkSize is the largest INSTREAM chunk (default 64 KiB; at most
	// MaxChunkSize). Write slices its input, it does not copy it.
	ChunkSize int
}

// Client talks to one clamd. It is safe for concurrent use.
type Client struct {
	cfg    Config
	dialer net.Dialer
	// slots holds a token per open scan; its capacity is MaxConns.
	slots chan struct{}
	// waiting counts the scans waiting for a slot (Stats).
	waiting atomic.Int64
	// log hears of clamd's version when it changes (Probe).
	log *slog.Logger

	versionMu   sync.Mutex
	lastVersion string // the version Probe last logged
}

// An Option sets what a Client needs besides its Config.
type Option func(*Client)

// WithLog is where a Client logs (by default nowhere).
func WithLog(log *slog.Logger) Option { return func(c *Client) { c.log = log } }

// Stats is how busy a Client is: its scans open (InUse, at most Max) and
// those waiting for one of them.
type Stats struct {
	InUse, Max, Waiting int
}

// Stats returns how busy c is now.
func (c *Client) Stats() Stats {
	return Stats{InUse: len(c.slots), Max: cap(c.slots), Waiting: int(c.waiting.Load())}
}

var _ storage.Scanner = (*Client)(nil)

// New validates cfg, applies the defaults to its zero fields, and returns
// a Client with opts. It does not connect: Ping does.
func New(cfg Config, opts ...Option) (*Client, error) {
	var errs []error
	switch cfg.Network {
	case "tcp", "unix":
	default:
		errs = append(errs, fmt.Errorf("clamd network %q: want tcp or unix", cfg.Network))
	}
	if cfg.Address == "" || strings.ContainsFunc(cfg.Address, isControl) {
		errs = append(errs, fmt.Errorf("clamd address %q: empty or has control characters", cfg.Address))
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"DialTimeout", &cfg.DialTimeout, DefaultDialTimeout},
		{"IOTimeout", &cfg.IOTimeout, DefaultIOTimeout},
		{"VerdictTimeout", &cfg.VerdictTimeout, DefaultVerdictTimeout},
		{"WaitTimeout", &cfg.WaitTimeout, DefaultWaitTimeout},
	} {
		switch {
		case *d.v < 0:
			errs = append(errs, fmt.Errorf("clamd %s %s: negative", d.name, *d.v))
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case cfg.MaxConns < 0:
		errs = append(errs, fmt.Errorf("clamd MaxConns %d: negative", cfg.MaxConns))
	case cfg.MaxConns == 0:
		cfg.MaxConns = DefaultMaxConns
	}
	switch {
	case cfg.ChunkSize < 0 || cfg.ChunkSize > MaxChunkSize:
		errs = append(errs, fmt.Errorf("clamd ChunkSize %d: want 1 to %d", cfg.ChunkSize, MaxChunkSize))
	case cfg.ChunkSize == 0:
		cfg.ChunkSize = DefaultChunkSize
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c := &Client{
		cfg:    cfg,
		dialer: net.Dialer{Timeout: cfg.DialTimeout},
		slots:  make(chan struct{}, cfg.MaxConns),
		log:    slog.New(slog.DiscardHandler),
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Config returns the configuration in use, defaults applied.
func (c *Client) Config() Config { return c.cfg }

// Ping checks that clamd answers PING with PONG.
func (c *Client) Ping(ctx context.Context) error {
	reply, err := c.command(ctx, "PING")
	if err != nil {
		return err
	}
	if reply != "PONG" {
		return unavailable(fmt.Errorf("clamd PING: %w: %q", errGarbage, clip(reply)))
	}
	return nil
}

// Version returns clamd's VERSION reply, such as
// "ClamAV 1.4.6/27000/Mon Jun 1 08:00:00 2025" (engine, signature
// database version and date).
func (c *Client) Version(ctx context.Context) (string, error) {
	reply, err := c.command(ctx, "VERSION")
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(reply, "ClamAV ") || strings.ContainsFunc(reply, isControl) {
		return "", unavailable(fmt.Errorf("clamd VERSION: %w: %q", errGarbage, clip(reply)))
	}
	return reply, nil
}

// command sends one short command on a connection of its own and returns
// the reply, all within IOTimeout and ctx.
func (c *Client) command(ctx context.Context, name string) (string, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	_ = conn.SetDeadline(time.Now().Add(c.cfg.IOTimeout))
	reply, err := exchange(conn, name)
	if err != nil {
		return "", unavailable(fmt.Errorf("clamd %s: %w", name, withContext(ctx, err)))
	}
	return reply, nil
}

// withContext puts first, when ctx ended, that ctx ended (and its cause):
// the AfterFunc closed the connection, and err, then a closed
// connection's, followed.
func withContext(ctx context.Context, err error) error {
	ctxErr := ctx.Err()
	if ctxErr == nil {
		return err
	}
	if c := context.Cause(ctx); c != ctxErr {
		ctxErr = fmt.Errorf("%w: %w", ctxErr, c)
	}
	return fmt.Errorf("%w; %w", ctxErr, err)
}

func exchange(conn net.Conn, name string) (string, error) {
	if _, err := io.WriteString(conn, "z"+name+"\x00"); err != nil {
		return "", err
	}
	return readReply(conn)
}

// dial connects within DialTimeout and ctx.
func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	conn, err := c.dialer.DialContext(ctx, c.cfg.Network, c.cfg.Address)
	if err != nil {
		return nil, unavailable(fmt.Errorf("connect to clamd: %w", err))
	}
	return conn, nil
}

// acquire waits for a free slot of the MaxConns bound, at most
// WaitTimeout and within ctx.
func (c *Client) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return unavailable(fmt.Errorf("wait for a clamd connection: %w", err))
	}
	select {
	case c.slots <- struct{}{}:
		return nil
	default:
	}
	c.waiting.Add(1)
	defer c.waiting.Add(-1)
	wait := time.NewTimer(c.cfg.WaitTimeout)
	defer wait.Stop()
	select {
	case c.slots <- struct{}{}:
		return nil
	case <-wait.C:
		return errBusy.Wrap(fmt.Errorf("no clamd connection free within %s (%d in use)", c.cfg.WaitTimeout, c.cfg.MaxConns))
	case <-ctx.Done():
		return unavailable(fmt.Errorf("wait for a clamd connection (%d in use): %w", c.cfg.MaxConns, ctx.Err()))
	}
}

// busyRetryAfter is what a scan refused as busy tells the client to wait.
const busyRetryAfter = 2 * time.Second

// errBusy is a scan refused because every connection stayed in use.
var errBusy = func() *core.Error {
	e := storage.ErrScannerUnavailable.WithMessage("The malware scanner is busy; nothing was stored, try again shortly")
	e.RetryAfter = busyRetryAfter
	return e
}()

func (c *Client) release() { <-c.slots }

// unavailable is the error of a scanner that cannot be reached or
// answer; with errBusy (no connection free in time), the only ones the
// package returns, both storage.ErrScannerUnavailable.
func unavailable(cause error) error { return storage.ErrScannerUnavailable.Wrap(cause) }
