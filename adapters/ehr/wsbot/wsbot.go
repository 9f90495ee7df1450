// Package wsbot is the WebSocket-bot adapter of the EHR core: it speaks
// the contract's bot protocol (text frames of JSON; a request
// {id, type:"request", action, payload} is answered by
// {id, type:"response", ok, result | error{code, message}}) over one
// WebSocket link per Client, and implements ehr.Scheduler and
// ehr.PatientSearcher. Wire types never leave the package; failures become
// *core.Error.
//
// The link:
//   - is opened lazily by the first call, with the handshake headers of
//     Config.Header (the credentials, from ehrhttp.Client.AuthHeader);
//   - carries any number of concurrent calls: each request has a unique id
//     (a random prefix and a counter); one writer goroutine sends the
//     frames and the pings, one reader goroutine hands each answer to the
//     call waiting for its id;
//   - is kept alive with a ping every PingInterval; every pong moves the
//     read deadline to PingInterval+PongTimeout ahead, so a peer that stops
//     answering pings is dropped;
//   - when it drops, every call waiting on it fails at once (KindBadGateway
//     "ehr_unreachable", or KindTimeout "ehr_timeout" when the peer fell
//     silent) and the next call opens a new one. Reconnection attempts
//     after failures are spaced by an exponential backoff with jitter
//     (random in [d/2, d], d = BackoffBase·2^(n-1) capped at BackoffMax,
//     n the failures in a row); a call whose deadline comes before the next
//     allowed attempt fails at once instead of waiting. A link that
//     carried an answer resets the backoff; one that drops before any
//     answer counts as a failure, so a peer that accepts and hangs up is
//     not hammered.
//
// Each call has a time-out (the earlier of ctx's deadline and CallTimeout;
// KindTimeout "ehr_timeout") and goes through a circuit breaker
// (gobreaker): dropped links, failed connection attempts and time-outs
// count as failures (a drop or a failed attempt once, however many calls
// it fails); answers, protocol errors (not_found, invalid, …) and refused
// credentials count as successes (the EHR is up); the caller's
// cancellation, Close and a failure of Config.Header are not counted.
// After BreakerFailures failures in a row the breaker answers
// KindUnavailable "circuit_open" at once for BreakerOpen, then lets one
// trial call through.
//
// The client neither retries calls the EHR may have seen nor applies the
// EHR systems file's rate limit; a request that never left the client is
// sent once more over a new link.
//
// Protocol error codes become, for the Scheduler: not_found →
// ehr.ErrAgentNotFound (agents.get, agents.availability,
// appointments.create) or ehr.ErrAppointmentNotFound (appointments.get,
// cancel, reschedule); agent_unavailable → ehr.ErrAgentUnavailable;
// conflict → ehr.ErrAlreadyCancelled for a cancel, else KindConflict
// "ehr_conflict"; invalid → KindInvalid "validation_failed" with the peer's
// message; unauthorized → KindBadGateway "ehr_unauthorized" (so does a
// handshake refused with HTTP 401 or 403); unknown_action → KindBadGateway
// "ehr_unknown_action"; any other code → KindBadGateway "ehr_error". For
// SearchPatients every protocol error is KindBadGateway (the
// PatientSearcher port's kinds). Messages name the EHR system, never a
// credential.
//
// With Config.Metrics set, the client reports its link's state (up when a
// link is open, down from New and after a drop), each link opened after
// the first (a reconnection) and its breaker's state.
package wsbot

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sony/gobreaker/v2"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// Defaults and bounds.
const (
	DefaultSearchAction    = "patients.search"
	DefaultCallTimeout     = 10 * time.Second
	DefaultPingInterval    = 20 * time.Second
	DefaultPongTimeout     = 10 * time.Second
	DefaultBackoffBase     = 100 * time.Millisecond
	DefaultBackoffMax      = 10 * time.Second
	DefaultBreakerFailures = 5
	DefaultBreakerOpen     = 30 * time.Second
	// MaxMessageBytes bounds one answer frame.
	MaxMessageBytes = 16 << 20
	// MaxPageSize is the largest page asked of patients.search.
	MaxPageSize = 100
	// MaxPages bounds the pages fetched for one patient search.
	MaxPages = 20
	// writeWait bounds the writing of one frame.
	writeWait = 10 * time.Second
	// outQueue is how many frames may wait for the writer.
	outQueue = 256
	// maxDetail bounds the upstream text quoted in an error message.
	maxDetail = 300
)

// Config is one WebSocket-bot EHR system.
type Config struct {
	Name         string        // EHR system name (errors, Source of appointments)
	URL          string        // ws:// or wss://
	SearchAction string        // default "patients.search"
	CallTimeout  time.Duration // per call; 0 → 10 s
	// Header gives the handshake credentials (ehrhttp.Client.AuthHeader);
	// it is asked at every (re)connection. May be nil.
	Header       func(ctx context.Context) (http.Header, error)
	PingInterval time.Duration // 0 → 20 s
	// PongTimeout is how long past the next ping a pong may take: the read
	// deadline is PingInterval+PongTimeout after the last pong. 0 → 10 s.
	PongTimeout time.Duration
	// BackoffBase and BackoffMax bound the wait between reconnection
	// attempts (0 → 100 ms and 10 s).
	BackoffBase, BackoffMax time.Duration
	// BreakerFailures failures in a row open the circuit breaker for
	// BreakerOpen (0 → 5 and 30 s).
	BreakerFailures uint32
	BreakerOpen     time.Duration
	// TLSConfig is used for wss:// (nil: the system's roots).
	TLSConfig *tls.Config
	// Logger receives the client's warnings (dropped links, failed
	// attempts, breaker changes, unknown statuses); the caller adds the
	// component and system attributes. nil → discard.
	Logger *slog.Logger
	// Metrics receives the link's state, the reconnections and the
	// breaker's state; the caller binds them to the system. nil: none.
	Metrics Metrics
}

// Metrics receives what a Client measures of its link. Implementations
// must be safe for concurrent use and must not block.
type Metrics interface {
	// LinkUp records whether a link is open (New reports false).
	LinkUp(up bool)
	// Reconnect records a link opened after the first one.
	Reconnect()
	// BreakerState records the circuit breaker's state: ehrclient.Closed,
	// HalfOpen or Open (New reports closed).
	BreakerState(state int)
}

// Client talks to one bot. It is safe for concurrent use; Close releases
// its link and goroutines.
type Client struct {
	name         string
	url          string
	searchAction string
	callTimeout  time.Duration
	pingInterval time.Duration
	pongTimeout  time.Duration
	backoffBase  time.Duration
	backoffMax   time.Duration
	header       func(ctx context.Context) (http.Header, error)
	dialer       *websocket.Dialer
	cb           *ehrclient.Breaker
	log          *slog.Logger
	metrics      Metrics // nil: none
	idPrefix     string
	seq          atomic.Uint64

	mu       sync.Mutex
	closed   bool
	cur      *link    // the live link, or nil
	dial     *dialing // the connection attempt under way, or nil
	failures int      // failed attempts (and links dropped before any answer) in a row
	linked   bool     // a link was opened once: the next ones are reconnections
	nextDial time.Time
	lastErr  error // the last attempt's failure
	wg       sync.WaitGroup
}

var (
	_ ehr.Scheduler       = (*Client)(nil)
	_ ehr.PatientSearcher = (*Client)(nil)
)

// dialing is one connection attempt, which concurrent calls share.
type dialing struct {
	at     time.Time // when the attempt starts (after its backoff)
	done   chan struct{}
	cancel context.CancelFunc
	link   *link // set before done is closed
	err    error
	// reported is set by the first call told of a failed attempt, the
	// only one the circuit breaker counts.
	reported atomic.Bool
}

func (d *dialing) result() (*link, error) {
	if d.err == nil || d.reported.CompareAndSwap(false, true) {
		return d.link, d.err
	}
	return nil, once(d.err)
}

// New validates cfg and returns its client; it does not connect (the first
// call does). Validation errors are joined and name the system and field.
func New(cfg Config) (*Client, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	def := func(d, v time.Duration) time.Duration {
		if v == 0 {
			return d
		}
		return v
	}
	c := &Client{
		name:         cfg.Name,
		url:          cfg.URL,
		searchAction: strings.TrimSpace(cfg.SearchAction),
		callTimeout:  def(DefaultCallTimeout, cfg.CallTimeout),
		pingInterval: def(DefaultPingInterval, cfg.PingInterval),
		pongTimeout:  def(DefaultPongTimeout, cfg.PongTimeout),
		backoffBase:  def(DefaultBackoffBase, cfg.BackoffBase),
		backoffMax:   def(DefaultBackoffMax, cfg.BackoffMax),
		header:       cfg.Header,
		log:          cfg.Logger,
		metrics:      cfg.Metrics,
	}
	if c.searchAction == "" {
		c.searchAction = DefaultSearchAction
	}
	if c.log == nil {
		c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.dialer = &websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: c.callTimeout,
		TLSClientConfig:  cfg.TLSConfig,
	}
	var b [6]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails
	c.idPrefix = hex.EncodeToString(b[:]) + "-"

	if c.metrics != nil {
		c.metrics.LinkUp(false)
	}
	c.cb = ehrclient.NewBreaker(ehrclient.BreakerConfig{
		Name:     cfg.Name,
		Failures: cmp.Or(cfg.BreakerFailures, DefaultBreakerFailures),
		Open:     def(DefaultBreakerOpen, cfg.BreakerOpen),
		Metrics:  c.metrics,
		OnChange: func(from, to gobreaker.State) {
			c.log.Warn("wsbot circuit breaker changed state", "from", from.String(), "to", to.String())
		},
	})
	return c, nil
}

func (cfg Config) validate() error {
	var errs []error
	name := cfg.Name
	if strings.TrimSpace(name) == "" {
		name = "(unnamed)"
		errs = append(errs, errors.New("wsbot: name is required"))
	}
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("ehr system %q: %s %s", name, field, fmt.Sprintf(format, args...)))
	}
	u, err := url.Parse(cfg.URL)
	switch {
	case cfg.URL == "":
		bad("base_url", "is required")
	case err != nil:
		bad("base_url", "is not a valid URL")
	case u.Scheme != "ws" && u.Scheme != "wss":
		bad("base_url", "must be a ws:// or wss:// URL")
	case u.Hostname() == "":
		bad("base_url", "has no host")
	case u.User != nil:
		bad("base_url", "must not carry credentials (use authentication)")
	case u.Fragment != "":
		bad("base_url", "must not have a fragment")
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"timeout", cfg.CallTimeout}, {"ping interval", cfg.PingInterval}, {"pong timeout", cfg.PongTimeout},
		{"backoff base", cfg.BackoffBase}, {"backoff max", cfg.BackoffMax}, {"breaker open", cfg.BreakerOpen}} {
		if d.v < 0 {
			bad(d.field, "must not be negative")
		}
	}
	return errors.Join(errs...)
}

// Name is the EHR system's name.
func (c *Client) Name() string { return c.name }

// Close fails the calls in flight (KindUnavailable "ehr_closed"), closes
// the link and waits for the client's goroutines. Calls after Close fail
// the same way. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	l := c.cur
	c.cur = nil
	if c.dial != nil {
		c.dial.cancel()
	}
	c.mu.Unlock()
	if l != nil {
		l.end(c.closedError(), true)
	}
	c.wg.Wait()
	return nil
}

// call sends one request and decodes its result into out (when not nil).
// A failure of the EHR is logged at WARN (see logFailure).
func (c *Client) call(ctx context.Context, action string, payload, out any) error {
	start := time.Now()
	err := c.exchange(ctx, action, payload, out)
	if err != nil {
		c.logFailure(ctx, action, err, time.Since(start))
	}
	return err
}

// logFailure writes one WARN line for a call that failed on the EHR's
// side: the action, the code and duration_ms — not the message or the
// cause, which can quote the peer (and the peer the patient), and never
// the payload or an answer. Answers that refuse the request (not found,
// invalid, conflict, an agent not free) are not failures; neither is the
// caller's cancellation. Dropped links and failed connection attempts
// have their own lines, with the network cause.
func (c *Client) logFailure(ctx context.Context, action string, err error, took time.Duration) {
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return
	}
	code := "ehr_error"
	var ce *core.Error
	if errors.As(err, &ce) {
		switch ce.Kind {
		case core.KindNotFound, core.KindInvalid, core.KindConflict:
			return
		}
		code = ce.Code
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "wsbot call failed", slog.String("action", clip(action)),
		slog.String("code", code), ehrclient.DurationMS(took))
}

// exchange is call without the log line.
func (c *Client) exchange(ctx context.Context, action string, payload, out any) error {
	body, err := json.Marshal(payload)
	if err != nil {
		return &core.Error{Kind: core.KindInternal, Code: "internal_error",
			Message: "the request to " + c.name + " could not be encoded", Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	done, err := c.cb.Allow()
	if err != nil {
		return err // circuit_open
	}
	raw, err := c.roundTrip(ctx, action, body)
	done(verdict(err))
	if err != nil {
		return bare(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return c.badAnswer(action, "its result is malformed", err)
		}
	}
	return nil
}

// roundTrip sends one request frame over the link (opening one if need
// be) and waits for its answer. Its errors carry the breaker's verdict
// (healthy, uncounted, or neither: a failure).
func (c *Client) roundTrip(ctx context.Context, action string, payload []byte) (json.RawMessage, error) {
	id := c.idPrefix + strconv.FormatUint(c.seq.Add(1), 36)
	frame := encodeRequest(id, action, payload)
	// A request that never reached the writer is tried once more on a new
	// link (it cannot have been seen by the EHR).
	for attempt := 0; ; attempt++ {
		l, err := c.connect(ctx)
		if err != nil {
			return nil, err
		}
		ch, err := l.register(id)
		if err != nil {
			if attempt == 0 {
				continue
			}
			return nil, err
		}
		select {
		case l.out <- frame:
		case <-l.done:
			if attempt == 0 {
				continue
			}
			return nil, l.deadErr()
		case <-ctx.Done():
			l.forget(id)
			return nil, c.contextError(ctx.Err())
		}
		select {
		case a := <-ch:
			return c.result(action, a)
		case <-l.done:
			select {
			case a := <-ch:
				return c.result(action, a)
			default:
			}
			return nil, l.deadErr()
		case <-ctx.Done():
			l.forget(id)
			return nil, c.contextError(ctx.Err())
		}
	}
}

func encodeRequest(id, action string, payload []byte) []byte {
	a, _ := json.Marshal(action)
	b := make([]byte, 0, len(id)+len(a)+len(payload)+64)
	b = append(b, `{"id":"`...)
	b = append(b, id...) // hex, base-36 digits and '-': nothing to escape
	b = append(b, `","type":"request","action":`...)
	b = append(b, a...)
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}')
}

// result turns an answer into the result or the error of its action.
func (c *Client) result(action string, a answer) (json.RawMessage, error) {
	if a.err == nil {
		if !a.ok {
			return nil, healthy(c.badAnswer(action, "it is neither a result nor an error", nil))
		}
		if len(a.result) == 0 {
			return json.RawMessage("null"), nil
		}
		return a.result, nil
	}
	return nil, healthy(c.protocolError(action, a.err))
}

// protocolError maps a protocol error code to the Scheduler's errors.
func (c *Client) protocolError(action string, pe *wireError) error {
	cause := &peerError{code: pe.Code, message: pe.Message}
	msg := clip(pe.Message)
	search := action == c.searchAction
	switch {
	case pe.Code == "unauthorized":
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unauthorized",
			Message: c.name + " refused the credentials", Err: cause}
	case pe.Code == "unknown_action":
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unknown_action",
			Message: fmt.Sprintf("%s does not support the action %q", c.name, clip(action)), Err: cause}
	case search:
		// The PatientSearcher port knows only upstream failures.
	case pe.Code == "not_found":
		switch action {
		case actionGetAgent, actionAvailability, actionCreate:
			return ehr.ErrAgentNotFound.Wrap(cause)
		case actionGetAppointment, actionCancel, actionReschedule:
			return ehr.ErrAppointmentNotFound.Wrap(cause)
		}
	case pe.Code == "agent_unavailable":
		return ehr.ErrAgentUnavailable.Wrap(cause)
	case pe.Code == "conflict":
		if action == actionCancel {
			return ehr.ErrAlreadyCancelled.Wrap(cause)
		}
		if msg == "" {
			msg = "the request conflicts with the record's state"
		}
		return &core.Error{Kind: core.KindConflict, Code: "ehr_conflict",
			Message: c.name + " refused: " + msg, Err: cause}
	case pe.Code == "invalid":
		if msg == "" {
			msg = "the request is invalid"
		}
		return &core.Error{Kind: core.KindInvalid, Code: "validation_failed",
			Message: c.name + ": " + msg, Err: cause}
	}
	text := clip(pe.Code)
	if msg != "" {
		text += ": " + msg
	}
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_error",
		Message: c.name + " failed: " + text, Err: cause}
}

func (c *Client) badAnswer(action, what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: fmt.Sprintf("%s sent an invalid answer to %s: %s", c.name, clip(action), what), Err: cause}
}

func (c *Client) unreachable(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: c.name + " " + what, Err: cause}
}

func (c *Client) timeoutError(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: c.name + " " + what, Err: cause}
}

func (c *Client) closedError() error {
	return uncounted(&core.Error{Kind: core.KindUnavailable, Code: "ehr_closed",
		Message: "the connection to " + c.name + " is closed"})
}

// contextError reports the end of a call's context: a time-out counts for
// the breaker, the caller's cancellation does not.
func (c *Client) contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return c.timeoutError("did not answer in time", err)
	}
	return uncounted(&core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
		Message: "the request to " + c.name + " was cancelled", Err: err})
}

// connect returns the live link, opening one (or joining the attempt
// under way) if there is none.
func (c *Client) connect(ctx context.Context) (*link, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, c.closedError()
	}
	if l := c.cur; l != nil {
		if !l.dead() {
			c.mu.Unlock()
			return l, nil
		}
		c.cur = nil
	}
	d := c.dial
	if d == nil {
		d = &dialing{at: c.nextDial, done: make(chan struct{})}
		if now := time.Now(); d.at.Before(now) {
			d.at = now
		}
		if late(ctx, d.at) {
			c.mu.Unlock()
			return nil, c.backingOff(d.at)
		}
		dctx, cancel := context.WithTimeout(context.Background(), time.Until(d.at)+c.callTimeout)
		d.cancel = cancel
		c.dial = d
		c.wg.Add(1)
		go c.runDial(dctx, d)
	} else if late(ctx, d.at) {
		c.mu.Unlock()
		return nil, c.backingOff(d.at)
	}
	c.mu.Unlock()
	select {
	case <-d.done:
		return d.result()
	case <-ctx.Done():
		return nil, c.contextError(ctx.Err())
	}
}

// backingOff is the failure of a call that cannot wait for the next
// connection attempt at. The breaker counted the failure that caused the
// wait already.
func (c *Client) backingOff(at time.Time) error {
	c.mu.Lock()
	cause := c.lastErr
	c.mu.Unlock()
	var ce *core.Error
	if errors.As(cause, &ce) && ce.Code != "ehr_unreachable" && ce.Kind != core.KindTimeout {
		return uncounted(ce) // refused credentials and the like: say so again
	}
	return uncounted(c.unreachable(fmt.Sprintf("is unreachable; the next connection attempt is in %v",
		time.Until(at).Round(time.Millisecond)), cause))
}

// late reports whether ctx ends before t.
func late(ctx context.Context, t time.Time) bool {
	dl, ok := ctx.Deadline()
	return ok && dl.Before(t)
}

// runDial waits for d's time, opens a link and installs it.
func (c *Client) runDial(ctx context.Context, d *dialing) {
	defer c.wg.Done()
	defer d.cancel()
	var (
		ws  *websocket.Conn
		err error
	)
	if wait := time.Until(d.at); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	if ctx.Err() == nil {
		ws, err = c.open(ctx)
	} else {
		err = c.closedError()
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	c.dial = nil
	if err == nil && c.closed {
		if cerr := ws.Close(); cerr != nil {
			c.log.Warn("wsbot could not close a socket opened as the client closed", "error", cerr)
		}
		err = c.closedError()
	}
	if err != nil {
		if !c.closed {
			c.backOffLocked(err)
			c.log.Warn("wsbot could not connect", "error", err, "failures", c.failures)
		}
		d.err = err
		close(d.done)
		return
	}
	l := newLink(c, ws)
	c.cur = l
	if c.metrics != nil {
		c.metrics.LinkUp(true)
		if c.linked {
			c.metrics.Reconnect()
		}
	}
	c.linked = true
	c.wg.Add(2)
	go l.readLoop()
	go l.writeLoop()
	d.link = l
	close(d.done)
}

// backOffLocked records a failed attempt and schedules the next.
func (c *Client) backOffLocked(err error) {
	c.failures++
	c.lastErr = bare(err)
	c.nextDial = time.Now().Add(c.backoff(c.failures))
}

// backoff is the wait before attempt n+1 after n failures: random in
// [d/2, d], d = min(max, base·2^(n-1)).
func (c *Client) backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := c.backoffMax
	if n <= 31 {
		if b := c.backoffBase << (n - 1); b > 0 && b < d {
			d = b
		}
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// linkDead is called once when a link dies.
func (c *Client) linkDead(l *link, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.metrics != nil && (c.cur == l || c.cur == nil) {
		// A newer link may be up already: only this one's end is told.
		c.metrics.LinkUp(false)
	}
	if c.cur == l {
		c.cur = nil
	}
	if c.closed {
		return
	}
	if l.answered.Load() {
		c.failures, c.nextDial, c.lastErr = 0, time.Time{}, bare(err)
	} else {
		c.backOffLocked(err)
	}
	c.log.Warn("wsbot link dropped", "error", err)
}

// open dials the bot and completes the handshake.
func (c *Client) open(ctx context.Context) (*websocket.Conn, error) {
	var h http.Header
	if c.header != nil {
		var err error
		if h, err = c.header(ctx); err != nil {
			var ce *core.Error
			if errors.As(err, &ce) {
				return nil, uncounted(err)
			}
			return nil, uncounted(&core.Error{Kind: core.KindBadGateway, Code: "ehr_auth_failed",
				Message: "authentication to " + c.name + " failed", Err: err})
		}
	}
	ws, resp, err := c.dialer.DialContext(ctx, c.url, h)
	if err != nil {
		if resp != nil {
			switch resp.StatusCode {
			case http.StatusUnauthorized, http.StatusForbidden:
				return nil, healthy(&core.Error{Kind: core.KindBadGateway, Code: "ehr_unauthorized",
					Message: fmt.Sprintf("%s refused the credentials (HTTP %d)", c.name, resp.StatusCode), Err: err})
			}
			return nil, c.unreachable(fmt.Sprintf("refused the connection (HTTP %d)", resp.StatusCode), err)
		}
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			return nil, c.timeoutError("did not accept the connection in time", err)
		}
		if errors.Is(err, context.Canceled) {
			return nil, c.closedError()
		}
		return nil, c.unreachable("could not be reached", err)
	}
	ws.SetReadLimit(MaxMessageBytes)
	return ws, nil
}

// judged is a failure the breaker is not to count as one: the EHR
// answered (ehrclient.Success: a protocol error, refused credentials), or
// it says nothing of the EHR's health (ehrclient.Ignore: the caller
// cancelled, the client closed, no credentials could be had, a failure
// counted once already). Any other error is the EHR's failure.
type judged struct {
	err error
	v   ehrclient.Verdict
}

func (j judged) Error() string { return j.err.Error() }
func (j judged) Unwrap() error { return j.err }

func healthy(err error) error   { return judged{err, ehrclient.Success} }
func uncounted(err error) error { return judged{err, ehrclient.Ignore} }

// verdict is the breaker's verdict on a call's error.
func verdict(err error) ehrclient.Verdict {
	if err == nil {
		return ehrclient.Success
	}
	if j, ok := err.(judged); ok {
		return j.v
	}
	return ehrclient.Failure
}

// bare strips the breaker's verdict from err.
func bare(err error) error {
	if j, ok := err.(judged); ok {
		return j.err
	}
	return err
}

// once marks err, counted already, as not to be counted again.
func once(err error) error {
	if _, ok := err.(judged); ok {
		return err
	}
	return uncounted(err)
}

// peerError is a protocol error as the EHR sent it (the cause, for logs).
type peerError struct{ code, message string }

func (e *peerError) Error() string {
	return fmt.Sprintf("peer error %s: %s", clip(e.code), clip(e.message))
}

// clip makes upstream text fit for an error message.
func clip(s string) string { return ehr.ClipText(s, maxDetail) }
