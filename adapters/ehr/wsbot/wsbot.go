// Package wsbot is the WebSocket-bot adapter of the EHR core: it speaks
// the contract's bot protocol (text frames of JSON; a request
// {id, type:"request", action, payload} is answered by
// {id, type:"response", ok, result | error{code, message}}) over one
// WebSocket link per Client, and implements ehr.Scheduler and
// ehr.PatientSearcher; SearchRecords reads clinical records. Wire types
// never leave the package; failures become *core.Error.
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
// SearchPatients and SearchRecords every protocol error is KindBadGateway
// (the PatientSearcher port's kinds); for SearchRecords, unknown_action is
// "record_type_not_supported" (the bot cannot search records). Messages name the EHR system, never a
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
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/sony/gobreaker/v2"
	"go.opentelemetry.io/otel/trace"

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
	// Tracer makes one client span per call, named by its action (see
	// trace.go); nil: none.
	Tracer trace.TracerProvider
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
	metrics      Metrics      // nil: none
	tracer       trace.Tracer // nil: no spans
	maxRecords   int          // MaxRecords; smaller in tests
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
		maxRecords:   MaxRecords,
	}
	if cfg.Tracer != nil {
		c.tracer = cfg.Tracer.Tracer(ehrclient.TracerName)
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
	ctx, span := ehrclient.StartSpan(ctx, c.tracer, c.name, clip(action))
	err := c.exchange(ctx, action, payload, out)
	c.endSpan(ctx, span, err)
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
