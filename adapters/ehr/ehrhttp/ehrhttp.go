// Package ehrhttp is the one HTTP client Carebridge uses to reach an EHR
// system: it authenticates each request (OAuth2 client credentials with a
// client secret or, for SMART Backend Services, a signed JWT assertion
// (private_key_jwt); API key; or Basic), and applies the system's resilience settings from the EHR
// systems file — a per-attempt time-out, retries with exponential backoff
// and full jitter (honouring Retry-After), a requests-per-minute limit and a
// circuit breaker. The FHIR adapter sends its requests through it, and the
// WebSocket bot adapter takes its handshake credentials from AuthHeader.
//
// Do returns the EHR's answer whatever its status (the caller reads
// OperationOutcome bodies), and an error only when no answer came: a
// *core.Error of
//
//	KindTimeout      ehr_timeout      no answer within the time-out (after retries)
//	KindRateLimited  rate_limited     the per-system limit would make the caller wait past the time-out
//	KindUnavailable  circuit_open     the circuit breaker is open: the EHR is not called
//	KindBadGateway   ehr_unreachable  network failure (after retries)
//	KindBadGateway   ehr_auth_failed  the OAuth2 token endpoint failed
//
// Messages name the system, never a secret or a token; the causes kept for
// logs (Error.Err) have every configured secret masked as well.
//
// Resilience, in the order a request meets it:
//   - the circuit breaker (one per Client) is asked first; while open it
//     answers circuit_open at once. It counts every attempt: network errors,
//     time-outs (the caller's deadline included), 429 and 5xx are
//     failures; 2xx, 3xx and other 4xx are successes; refusals of the rate
//     limiter, token failures and the caller's cancellation are not
//     counted. It opens after 5
//     consecutive failures for 30 s (WithBreaker), then lets one trial
//     request through (half-open).
//   - the rate limiter (golang.org/x/time/rate): requests_per_minute spread
//     evenly, with a burst of max(1, rpm/60) — one second's worth — so an
//     idle system does not release a large burst at once. A request waits
//     for its turn within its attempt's time-out, or fails at once with
//     rate_limited (RetryAfter set) when its turn lies beyond it.
//   - the per-attempt time-out covers the limiter wait, the token, the
//     exchange and the reading of the response body (the body stays
//     readable after Do returns; closing it releases the attempt).
//   - retries (RetryAttempts after the first attempt) on network errors,
//     time-outs, 429 and 5xx, waiting a random time in [0, min(2 s,
//     100 ms·2^n)] (full jitter, WithBackoff) or the Retry-After the EHR
//     sent (seconds or an HTTP date, at most 30 s). Do never sleeps past
//     ctx's deadline: when the wait would reach it, the last answer (or
//     failure) is returned at once. Only GET and HEAD requests, requests
//     without a body and requests whose body can be replayed (GetBody) are
//     retried.
//   - OAuth2: a 401 answer drops the cached token and the request is sent
//     once more with a fresh one (in addition to RetryAttempts).
//
// With Config.Logger set, a Do call that failed logs one line at WARN,
// "ehr request failed": code (the *core.Error's, or "ehr_status" for a
// final answer of 401, 403, 429 or 5xx), status (the last HTTP status the
// EHR answered, when it answered), retries (attempts after the first),
// duration_ms, method and, for errors, the cause. Never the URL, the query
// or a body: a search URL carries names and birth dates. A call the caller
// cancelled is not the EHR's failure and is not logged.
//
// With Config.Metrics set, every Do call is measured: its outcome (one of
// Outcomes), its duration (retries and waits included) and its retries;
// each wait the rate limiter imposes; and every change of the breaker's
// state. The client does not depend on Prometheus: app implements Metrics.
package ehrhttp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sony/gobreaker/v2"
	"golang.org/x/time/rate"

	"github.com/carebridge/carebridge/core"
)

// Defaults and bounds.
const (
	// DefaultTimeout is the per-attempt time-out when Config.Timeout is 0.
	DefaultTimeout = 10 * time.Second
	// MaxRetryAttempts bounds Config.RetryAttempts.
	MaxRetryAttempts = 10
	// DefaultBreakerFailures is how many consecutive failed attempts open
	// the circuit breaker.
	DefaultBreakerFailures = 5
	// DefaultBreakerOpen is how long the breaker stays open before it lets a
	// trial request through.
	DefaultBreakerOpen = 30 * time.Second
	// DefaultBackoffBase and DefaultBackoffMax bound the jittered wait
	// between attempts: random in [0, min(max, base·2^n)].
	DefaultBackoffBase = 100 * time.Millisecond
	DefaultBackoffMax  = 2 * time.Second
	// MaxRetryAfter caps the wait a Retry-After header can ask for.
	MaxRetryAfter = 30 * time.Second
	// DefaultTokenEarlyExpiry is how long before its expiry an OAuth2 token
	// is replaced.
	DefaultTokenEarlyExpiry = 30 * time.Second
	// maxDrain bounds what is read from a discarded answer so its
	// connection can be reused.
	maxDrain = 64 << 10
)

// Config is one EHR system, as the EHR systems file describes it.
type Config struct {
	Name              string // the EHR system's name, used in errors and metrics
	BaseURL           string // http(s) base of the EHR API (ws(s) for the WebSocket bot)
	Auth              AuthConfig
	RequestsPerMinute int           // 0: no limit
	Timeout           time.Duration // per attempt; 0 means DefaultTimeout
	RetryAttempts     int           // retries after the first attempt (0: none)
	// Logger receives a WARN line for each failed call (see the package
	// documentation); the caller adds the component and system
	// attributes. nil: no logging.
	Logger *slog.Logger
	// Metrics receives the client's measurements (see Metrics); the
	// caller binds them to the system. nil: no metrics.
	Metrics Metrics
}

// Metrics receives what a Client measures of one EHR system.
// Implementations must be safe for concurrent use and must not block.
type Metrics interface {
	// Request records one Do call: its outcome (one of Outcomes), how
	// long it took (retries, backoff and rate-limit waits included) and
	// the attempts it made after the first.
	Request(outcome string, took time.Duration, retries int)
	// RateLimitWait records a wait the rate limiter imposed on an attempt
	// (a turn past the time-out is refused, not waited: it shows as the
	// outcome rate_limited).
	RateLimitWait(wait time.Duration)
	// BreakerState records the circuit breaker's state: BreakerClosed,
	// BreakerHalfOpen or BreakerOpen. New reports closed.
	BreakerState(state int)
}

// The outcomes of a Do call, as Metrics.Request receives them: a fixed
// set, fit for a metric label.
const (
	OutcomeSuccess      = "success"       // an answer below 400
	OutcomeClientError  = "client_error"  // a 4xx answer other than 429
	OutcomeServerError  = "server_error"  // a 5xx answer
	OutcomeRateLimited  = "rate_limited"  // a 429 answer, or refused by the client's rate limiter
	OutcomeTimeout      = "timeout"       // no answer in time
	OutcomeCircuitOpen  = "circuit_open"  // the breaker refused the call
	OutcomeNetworkError = "network_error" // the exchange failed
	OutcomeAuthError    = "auth_error"    // no credentials could be obtained
	OutcomeCanceled     = "canceled"      // the caller went away
	OutcomeError        = "error"         // refused or not replayable: a fault of the caller's request
)

// Outcomes lists every outcome, so a metric can show each at zero.
var Outcomes = []string{OutcomeSuccess, OutcomeClientError, OutcomeServerError, OutcomeRateLimited,
	OutcomeTimeout, OutcomeCircuitOpen, OutcomeNetworkError, OutcomeAuthError, OutcomeCanceled, OutcomeError}

// The breaker states as Metrics.BreakerState receives them.
const (
	BreakerClosed   = 0
	BreakerHalfOpen = 1
	BreakerOpen     = 2
)

// Client sends requests to one EHR system. It is safe for concurrent use.
type Client struct {
	name      string
	base      *url.URL
	timeout   time.Duration
	retries   int
	hc        *http.Client
	auth      authenticator
	limiter   *rate.Limiter // nil: no limit
	cb        *gobreaker.CircuitBreaker[*http.Response]
	sleep     func(context.Context, time.Duration) error
	backoff   func(n int) time.Duration
	maskWords []string
	log       *slog.Logger // nil: no logging
	metrics   Metrics      // nil: no metrics
}

type options struct {
	client          *http.Client
	sleep           func(context.Context, time.Duration) error
	backoffBase     time.Duration
	backoffMax      time.Duration
	breakerFailures uint32
	breakerOpen     time.Duration
	tokenEarly      time.Duration
}

// Option adjusts a Client.
type Option func(*options)

// WithHTTPClient sets the client whose transport carries the requests to
// the EHR and to its token endpoint. The Client works on a copy: it adds
// its own redirect check (no redirect to another host), and a time-out of
// the Config's Timeout for token requests when c has none.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) {
		if c != nil {
			o.client = c
		}
	}
}

// WithSleep replaces the wait between attempts (tests record the
// durations instead of sleeping). sleep must return ctx's error if ctx ends
// first.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(o *options) {
		if sleep != nil {
			o.sleep = sleep
		}
	}
}

// WithBackoff sets the base and the cap (ceiling) of the exponential
// backoff: retry n waits a random time in [0, min(ceiling, base·2^n)].
func WithBackoff(base, ceiling time.Duration) Option {
	return func(o *options) {
		if base > 0 {
			o.backoffBase = base
		}
		if ceiling > 0 {
			o.backoffMax = ceiling
		}
	}
}

// WithBreaker sets how many consecutive failed attempts open the circuit
// breaker and how long it stays open.
func WithBreaker(failures uint32, open time.Duration) Option {
	return func(o *options) {
		if failures > 0 {
			o.breakerFailures = failures
		}
		if open > 0 {
			o.breakerOpen = open
		}
	}
}

// WithTokenEarlyExpiry sets how long before its expiry an OAuth2 token is
// replaced (default 30 s).
func WithTokenEarlyExpiry(d time.Duration) Option {
	return func(o *options) {
		if d >= 0 {
			o.tokenEarly = d
		}
	}
}

// New validates cfg and returns its client. Validation errors are joined
// (errors.Join), name the system and the field, and never quote a secret.
func New(cfg Config, opts ...Option) (*Client, error) {
	o := options{
		sleep:           sleepCtx,
		backoffBase:     DefaultBackoffBase,
		backoffMax:      DefaultBackoffMax,
		breakerFailures: DefaultBreakerFailures,
		breakerOpen:     DefaultBreakerOpen,
		tokenEarly:      DefaultTokenEarlyExpiry,
	}
	for _, opt := range opts {
		opt(&o)
	}
	base, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	hc := &http.Client{}
	if o.client != nil {
		cp := *o.client
		hc = &cp
	}
	c := &Client{
		name:      cfg.Name,
		base:      base,
		timeout:   timeout,
		retries:   cfg.RetryAttempts,
		sleep:     o.sleep,
		backoff:   fullJitter(o.backoffBase, o.backoffMax),
		maskWords: cfg.Auth.secrets(),
		log:       cfg.Logger,
		metrics:   cfg.Metrics,
	}
	tokenClient := *hc
	if tokenClient.Timeout == 0 {
		tokenClient.Timeout = timeout
	}
	c.auth = newAuthenticator(cfg.Auth, &tokenClient, o.tokenEarly)

	userRedirect := hc.CheckRedirect
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, c.base) {
			return http.ErrUseLastResponse
		}
		if userRedirect != nil {
			return userRedirect(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	c.hc = hc

	if rpm := cfg.RequestsPerMinute; rpm > 0 {
		c.limiter = rate.NewLimiter(rate.Limit(float64(rpm)/60), max(1, rpm/60))
	}
	failures := o.breakerFailures
	c.cb = gobreaker.NewCircuitBreaker[*http.Response](gobreaker.Settings{
		Name:    cfg.Name,
		Timeout: o.breakerOpen,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			return n.ConsecutiveFailures >= failures
		},
		IsExcluded: func(err error) bool {
			var ne notCounted
			return errors.As(err, &ne)
		},
		OnStateChange: func(_ string, _, to gobreaker.State) {
			if c.metrics != nil {
				c.metrics.BreakerState(breakerState(to))
			}
		},
	})
	if c.metrics != nil {
		c.metrics.BreakerState(BreakerClosed)
	}
	return c, nil
}

// validate checks cfg and returns its parsed base URL.
func (cfg Config) validate() (*url.URL, error) {
	var errs []error
	name := cfg.Name
	if strings.TrimSpace(name) == "" {
		name = "(unnamed)"
		errs = append(errs, errors.New("ehr system: name is required"))
	}
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("ehr system %q: %s %s", name, field, fmt.Sprintf(format, args...)))
	}
	base, err := url.Parse(cfg.BaseURL)
	switch {
	case cfg.BaseURL == "":
		bad("base_url", "is required")
	case err != nil:
		bad("base_url", "is not a valid URL")
	case !oneOf(strings.ToLower(base.Scheme), "http", "https", "ws", "wss"):
		bad("base_url", "must be an absolute http, https, ws or wss URL")
	case base.Host == "" || base.Hostname() == "":
		bad("base_url", "has no host")
	case base.User != nil:
		bad("base_url", "must not carry credentials (use authentication)")
	case base.RawQuery != "" || base.Fragment != "" || base.ForceQuery:
		bad("base_url", "must not have a query or a fragment")
	}
	cfg.Auth.validate(bad)
	if cfg.RequestsPerMinute < 0 {
		bad("rate_limit.requests_per_minute", "must not be negative")
	}
	if cfg.Timeout < 0 {
		bad("timeout", "must not be negative")
	}
	if cfg.RetryAttempts < 0 || cfg.RetryAttempts > MaxRetryAttempts {
		bad("retry_attempts", "must be from 0 to %d", MaxRetryAttempts)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	base.Scheme = strings.ToLower(base.Scheme)
	return base, nil
}

// Name is the EHR system's name.
func (c *Client) Name() string { return c.name }

// URL returns the base URL joined with path (in escaped form: escape
// path segments such as ids with url.PathEscape) and the encoded query.
// "." and ".." segments are resolved.
func (c *Client) URL(path string, query url.Values) string {
	u := c.base.JoinPath(path)
	u.RawQuery = query.Encode()
	return u.String()
}

// AuthHeader returns the header that authenticates a request to this EHR:
// Authorization (Bearer or Basic) or the API-key header; empty without
// authentication. The WebSocket bot adapter sends it on its handshake.
// An OAuth2 token comes from the same cache as Do's.
func (c *Client) AuthHeader(ctx context.Context) (http.Header, error) {
	h, _, err := c.auth.header(ctx)
	if err != nil {
		return nil, c.authError(ctx, err)
	}
	return h, nil
}

// Do sends req to the EHR: req's URL must come from URL or be absolute on
// the base URL's scheme and host (any other target is refused, so a URL
// taken from an answer cannot send credentials elsewhere). ctx governs the
// whole call, retries included; req's own context is not used. req is not
// modified. See the package documentation for the rules.
func (c *Client) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	start := time.Now()
	var st callStats
	resp, err := c.do(ctx, req, &st)
	took := time.Since(start)
	c.logFailure(ctx, req, resp, err, st, took)
	if c.metrics != nil {
		c.metrics.Request(outcome(ctx, resp, err), took, max(st.attempts-1, 0))
	}
	return resp, err
}

// outcome classifies a Do call for Metrics.Request.
func outcome(ctx context.Context, resp *http.Response, err error) string {
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return OutcomeCanceled
		}
		var ce *core.Error
		if !errors.As(err, &ce) {
			return OutcomeError
		}
		switch ce.Code {
		case "ehr_timeout":
			return OutcomeTimeout
		case "rate_limited":
			return OutcomeRateLimited
		case "circuit_open":
			return OutcomeCircuitOpen
		case "ehr_unreachable":
			return OutcomeNetworkError
		case "ehr_auth_failed":
			return OutcomeAuthError
		}
		return OutcomeError
	}
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests:
		return OutcomeRateLimited
	case code >= 500:
		return OutcomeServerError
	case code >= 400:
		return OutcomeClientError
	}
	return OutcomeSuccess
}

// breakerState is a gobreaker state as Metrics.BreakerState receives it.
func breakerState(s gobreaker.State) int {
	switch s {
	case gobreaker.StateOpen:
		return BreakerOpen
	case gobreaker.StateHalfOpen:
		return BreakerHalfOpen
	}
	return BreakerClosed
}

// callStats is what Do's log line tells of a call.
type callStats struct {
	attempts int // attempts made (the first included)
	status   int // the last HTTP status the EHR answered; 0: none
}

// do is Do, recording the attempts and statuses in st.
func (c *Client) do(ctx context.Context, req *http.Request, st *callStats) (*http.Response, error) {
	if req == nil || req.URL == nil {
		return nil, c.refuse("no request")
	}
	if !sameOrigin(req.URL, c.base) || req.URL.User != nil {
		return nil, c.refuse(fmt.Sprintf("refused a request to %s://%s, not the system's host", req.URL.Scheme, req.URL.Host))
	}
	replayable := req.Method == "" || req.Method == http.MethodGet || req.Method == http.MethodHead ||
		req.Body == nil || req.Body == http.NoBody || req.GetBody != nil

	var (
		try         int  // retries done
		sent        bool // req.Body was used: later attempts need GetBody
		authRetried bool
	)
	for {
		var gen uint64
		resp, err := c.cb.Execute(func() (*http.Response, error) {
			st.attempts++
			r, g, err := c.attempt(ctx, req, sent)
			gen = g
			return r, err
		})
		sent = true
		if resp != nil {
			st.status = resp.StatusCode
		}

		var se *statusError
		switch {
		case err == nil && resp.StatusCode == http.StatusUnauthorized && c.auth.refreshable() && !authRetried && replayable:
			authRetried = true
			discard(resp)
			c.auth.invalidate(gen)
			continue
		case err == nil:
			return resp, nil
		case errors.As(err, &se):
			// resp is the EHR's answer (429 or 5xx).
		case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
			return nil, &core.Error{Kind: core.KindUnavailable, Code: "circuit_open",
				Message: c.name + " is temporarily unavailable after repeated failures", Err: err}
		}

		final := func() (*http.Response, error) {
			if resp != nil {
				return resp, nil
			}
			return nil, c.failure(ctx, err)
		}
		if !c.retryable(err) || !replayable || try >= c.retries || c.cb.State() == gobreaker.StateOpen {
			return final()
		}
		delay := c.backoff(try)
		if resp != nil {
			if ra, ok := RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				delay = min(ra, MaxRetryAfter)
			}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= delay {
			return final()
		}
		if resp != nil {
			discard(resp)
		}
		if err := c.sleep(ctx, delay); err != nil {
			return nil, c.failure(ctx, callerDone{err})
		}
		try++
	}
}

// attempt sends req once, under the limiter and the per-attempt time-out.
// It returns the answer (with a *statusError for 429 and 5xx, which the
// breaker counts as failures) and the generation of the OAuth2 token used.
func (c *Client) attempt(ctx context.Context, req *http.Request, sent bool) (*http.Response, uint64, error) {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	fail := func(err error) (*http.Response, uint64, error) {
		cancel()
		if ctx.Err() != nil {
			return nil, 0, callerDone{ctx.Err()}
		}
		return nil, 0, err
	}
	if c.limiter != nil {
		if wait, err := c.waitTurn(actx); err != nil {
			return fail(limited{wait: wait, err: err})
		}
	}
	h, gen, err := c.auth.header(actx)
	if err != nil {
		return fail(authFailed{err})
	}
	r := req.Clone(actx)
	if sent && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return fail(bodyFailed{err})
		}
		r.Body = body
	}
	for k, v := range h {
		r.Header[k] = v
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		cancel()
		switch {
		case errors.Is(ctx.Err(), context.Canceled):
			return nil, 0, callerDone{ctx.Err()}
		case actx.Err() == context.DeadlineExceeded:
			// The attempt's or the caller's deadline passed while the
			// EHR was at work: a time-out the breaker counts.
			return nil, 0, attemptTimeout{err}
		default:
			return nil, 0, networkError{err}
		}
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		return resp, gen, &statusError{code: resp.StatusCode}
	}
	return resp, gen, nil
}

// waitTurn waits for the limiter within ctx's deadline, as
// rate.Limiter.Wait does, and also reports how long the turn is away when
// it lies beyond the deadline.
func (c *Client) waitTurn(ctx context.Context) (time.Duration, error) {
	now := time.Now()
	r := c.limiter.ReserveN(now, 1)
	if !r.OK() {
		return 0, errors.New("rate limit reservation refused")
	}
	d := r.DelayFrom(now)
	if d == 0 {
		return 0, nil
	}
	if dl, ok := ctx.Deadline(); ok && now.Add(d).After(dl) {
		r.CancelAt(now)
		return d, fmt.Errorf("next turn in %v is past the time-out", d.Round(time.Millisecond))
	}
	if c.metrics != nil {
		c.metrics.RateLimitWait(d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return 0, nil
	case <-ctx.Done():
		r.Cancel()
		return 0, ctx.Err()
	}
}

// retryable reports whether the failure of an attempt is worth another.
func (c *Client) retryable(err error) bool {
	var (
		se *statusError
		at attemptTimeout
		ne networkError
	)
	return errors.As(err, &se) || errors.As(err, &at) || errors.As(err, &ne)
}

// failure turns the last attempt's failure into the *core.Error Do returns.
func (c *Client) failure(ctx context.Context, err error) error {
	var (
		lim limited
		af  authFailed
		cd  callerDone
		at  attemptTimeout
		bf  bodyFailed
	)
	switch {
	case errors.As(err, &lim):
		return &core.Error{Kind: core.KindRateLimited, Code: "rate_limited",
			Message: c.name + " is rate limited; try again later", RetryAfter: lim.wait, Err: c.mask(lim.err)}
	case errors.As(err, &af):
		return c.authError(ctx, af.err)
	case errors.As(err, &cd):
		if errors.Is(cd.err, context.DeadlineExceeded) {
			return c.timeoutError(cd.err)
		}
		return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
			Message: "the request to " + c.name + " was cancelled", Err: cd.err}
	case errors.As(err, &at):
		return c.timeoutError(c.mask(stripURL(at.err)))
	case errors.As(err, &bf):
		return &core.Error{Kind: core.KindInternal, Code: "internal_error",
			Message: "the request to " + c.name + " could not be replayed", Err: c.mask(bf.err)}
	default:
		var ne networkError
		if errors.As(err, &ne) {
			err = ne.err
		}
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable",
			Message: c.name + " could not be reached", Err: c.mask(stripURL(err))}
	}
}

// logFailure writes the WARN line of a failed call (see the package
// documentation): no URL, query or body, which can hold patient data.
func (c *Client) logFailure(ctx context.Context, req *http.Request, resp *http.Response, err error, st callStats, took time.Duration) {
	if c.log == nil {
		return
	}
	var code string
	switch {
	case err != nil:
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			return // the caller went away: not the EHR's failure
		}
		code = "ehr_error"
		var ce *core.Error
		if errors.As(err, &ce) {
			code = ce.Code
		}
	case resp != nil && failedStatus(resp.StatusCode):
		code = "ehr_status"
	default:
		return
	}
	attrs := make([]slog.Attr, 0, 6)
	attrs = append(attrs, slog.String("code", code))
	if st.status != 0 {
		attrs = append(attrs, slog.Int("status", st.status))
	}
	attrs = append(attrs, slog.Int("retries", max(st.attempts-1, 0)), durationMS(took))
	if req != nil {
		attrs = append(attrs, slog.String("method", cmp.Or(req.Method, http.MethodGet)))
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", err.Error()))
	}
	c.log.LogAttrs(ctx, slog.LevelWarn, "ehr request failed", attrs...)
}

// failedStatus reports whether a final answer is a failure of the EHR or
// of its credentials, worth a log line: 401, 403, 429 and 5xx. Other 4xx
// answer the request (not found, conflict, …).
func failedStatus(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden ||
		code == http.StatusTooManyRequests || code >= 500
}

func (c *Client) timeoutError(cause error) *core.Error {
	return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
		Message: c.name + " did not answer in time", Err: cause}
}

// authError reports a failure to obtain credentials (the token endpoint).
func (c *Client) authError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return c.failure(ctx, callerDone{ctx.Err()})
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return c.timeoutError(c.mask(err))
	}
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_auth_failed",
		Message: "authentication to " + c.name + " failed", Err: c.mask(tokenCause(err))}
}

func (c *Client) refuse(why string) error {
	return &core.Error{Kind: core.KindInternal, Code: "ehr_request_refused",
		Message: "request to " + c.name + " refused", Err: errors.New(why)}
}

// mask hides every configured secret in err's text.
func (c *Client) mask(err error) error {
	if err == nil || len(c.maskWords) == 0 {
		return err
	}
	return masked{err: err, words: c.maskWords}
}

// sameOrigin reports whether u is on base's scheme, host and port (the
// scheme's default port when none is written).
func sameOrigin(u, base *url.URL) bool {
	if u == nil || !u.IsAbs() {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return scheme == base.Scheme &&
		strings.EqualFold(u.Hostname(), base.Hostname()) &&
		portOf(u, scheme) == portOf(base, base.Scheme)
}

func portOf(u *url.URL, scheme string) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch scheme {
	case "https", "wss":
		return "443"
	default:
		return "80"
	}
}

func oneOf(s string, set ...string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

// discard drains a little of an unused answer (so its connection can be
// reused) and closes it.
func discard(resp *http.Response) {
	// A failure only costs the connection's reuse; there is nothing to tell.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()
}

// cancelBody ends the attempt's context when the body is closed, so the
// body stays readable after Do returns.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// The failures of one attempt, as the breaker and the retry loop see them.
type (
	// statusError: the EHR answered 429 or 5xx (counted as a failure).
	statusError struct{ code int }
	// attemptTimeout: no answer within the per-attempt time-out.
	attemptTimeout struct{ err error }
	// networkError: the exchange failed.
	networkError struct{ err error }
	// notCounted marks failures that say nothing about the EHR's health.
	notCounted interface{ notCounted() }
	// limited: the rate limiter would make the caller wait too long.
	limited struct {
		wait time.Duration
		err  error
	}
	// authFailed: no credentials could be obtained.
	authFailed struct{ err error }
	// callerDone: the caller's context ended.
	callerDone struct{ err error }
	// bodyFailed: the request body could not be replayed.
	bodyFailed struct{ err error }
)

func (e *statusError) Error() string   { return fmt.Sprintf("answered HTTP %d", e.code) }
func (e attemptTimeout) Error() string { return e.err.Error() }
func (e attemptTimeout) Unwrap() error { return e.err }
func (e networkError) Error() string   { return e.err.Error() }
func (e networkError) Unwrap() error   { return e.err }
func (e limited) Error() string        { return e.err.Error() }
func (e limited) Unwrap() error        { return e.err }
func (e authFailed) Error() string     { return e.err.Error() }
func (e authFailed) Unwrap() error     { return e.err }
func (e callerDone) Error() string     { return e.err.Error() }
func (e callerDone) Unwrap() error     { return e.err }
func (e bodyFailed) Error() string     { return e.err.Error() }
func (e bodyFailed) Unwrap() error     { return e.err }
func (limited) notCounted()            {}
func (authFailed) notCounted()         {}
func (callerDone) notCounted()         {}
func (bodyFailed) notCounted()         {}

// masked hides secrets in the text of an error it wraps.
type masked struct {
	err   error
	words []string
}

func (m masked) Error() string {
	s := m.err.Error()
	for _, w := range m.words {
		s = strings.ReplaceAll(s, w, "[redacted]")
	}
	return s
}

func (m masked) Unwrap() error { return m.err }

// stripURL drops the URL from a *url.Error, keeping the operation and the
// cause (a URL could carry query values better kept out of logs).
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// durationMS is the duration_ms attribute of a log line: d in milliseconds,
// a number with microsecond precision. Every log line that tells a
// duration uses it, so the unit is in the name.
func durationMS(d time.Duration) slog.Attr {
	return slog.Float64("duration_ms", float64(d.Microseconds())/1000)
}
