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
//     for its turn in our own queue, at most the per-attempt time-out and
//     never past ctx's deadline, or fails at once with rate_limited
//     (RetryAfter set; the breaker does not count it) when its turn lies
//     beyond that.
//   - the per-attempt time-out starts when the attempt is sent, after the
//     limiter's wait: it covers the token, the exchange and the reading of
//     the response body (the body stays readable after Do returns; closing
//     it releases the attempt). Time spent in our own queue is never
//     reported as ehr_timeout.
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
//
// The client is a stack of small decorators (see New), one concern each,
// in its own file: observe.go (log line and metrics), trace.go (the
// call's span and, with PropagateTrace, its traceparent), guard.go (the
// system's own origin only), errors.go (failures become *core.Error, with
// secrets masked), retry.go, breaker.go, timeout.go, limit.go, auth.go and
// send.go.
package ehrhttp

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
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
	// Tracer makes one client span per Do call (see withTrace); nil: no
	// spans, and nothing of a trace is sent.
	Tracer trace.TracerProvider
	// PropagateTrace sends the W3C traceparent of the call's span to the
	// EHR (the system's propagate_trace); without it the trace stays
	// inside the service.
	PropagateTrace bool
}

// Metrics receives what a Client measures of one EHR system.
// Implementations must be safe for concurrent use and must not block.
type Metrics interface {
	// Request records one Do call: its outcome (one of Outcomes), how
	// long it took (retries, backoff and rate-limit waits included) and
	// the attempts it made after the first.
	Request(outcome string, took time.Duration, retries int)
	// RateLimitWait records a wait the rate limiter imposed on an attempt
	// (a turn past the wait allowed is refused, not waited: it shows as
	// the outcome rate_limited).
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

// The breaker states as Metrics.BreakerState receives them (those of
// every EHR client: ehrclient's).
const (
	BreakerClosed   = ehrclient.Closed
	BreakerHalfOpen = ehrclient.HalfOpen
	BreakerOpen     = ehrclient.Open
)

// Client sends requests to one EHR system. It is safe for concurrent use.
type Client struct {
	name string
	base *url.URL
	auth authenticator
	errs translator
	do   doer // the stack New builds
}

// New validates cfg and returns its client. Validation errors are joined
// (errors.Join), name the system and the field, and never quote a secret.
func New(cfg Config, opts ...Option) (*Client, error) {
	o := newOptions(opts)
	base, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	timeout := cmp.Or(cfg.Timeout, DefaultTimeout)
	hc, tokenClient := o.httpClients(base, timeout)
	c := &Client{
		name: cfg.Name,
		base: base,
		auth: newAuthenticator(cfg.Auth, tokenClient, o.tokenEarly),
		errs: translator{name: cfg.Name, secrets: cfg.Auth.secrets()},
	}
	cb := ehrclient.NewBreaker(ehrclient.BreakerConfig{Name: cfg.Name,
		Failures: o.breakerFailures, Open: o.breakerOpen, Metrics: cfg.Metrics})
	lim := newLimiter(cfg.RequestsPerMinute)
	retry := retryPolicy{retries: cfg.RetryAttempts, backoff: fullJitter(o.backoffBase, o.backoffMax),
		sleep: o.sleep, auth: c.auth, stop: cb.IsOpen}

	// The stack, in the order a request meets it: first the whole call,
	// then each attempt.
	traced := func(next doer) doer { return next }
	if cfg.Tracer != nil {
		traced = withTrace(cfg.Tracer.Tracer(ehrclient.TracerName), cfg.Name, base, cfg.PropagateTrace, cb)
	}
	c.do = chain(send(hc),
		observe(cfg.Logger, cfg.Metrics),     // one log line and one measurement per call
		traced,                               // one span per call; the traceparent when allowed
		guard(base, c.errs),                  // only the system's own origin
		translate(c.errs),                    // failures become *core.Error
		withRetry(retry),                     // more attempts, and one more with a fresh token
		withBreaker(cb),                      // each attempt: refused while open, judged after
		countAttempt,                         // the attempts and statuses the call tells
		withLimit(lim, timeout, cfg.Metrics), // requests per minute: our queue, at most the time-out
		withTimeout(timeout),                 // the EHR's time-out, from the send until the body is closed
		withAuth(c.auth),                     // credentials
	)
	return c, nil
}

// newLimiter spreads rpm requests per minute evenly, with a burst of one
// second's worth; nil for no limit.
func newLimiter(rpm int) *rate.Limiter {
	if rpm <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(float64(rpm)/60), max(1, rpm/60))
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
		return nil, c.errs.coreError(ctx, &failure{kind: failAuth, err: err})
	}
	return h, nil
}

// Do sends req to the EHR: req's URL must come from URL or be absolute on
// the base URL's scheme and host (any other target is refused, so a URL
// taken from an answer cannot send credentials elsewhere). ctx governs the
// whole call, retries included; req's own context is not used. req is not
// modified. See the package documentation for the rules.
func (c *Client) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	return c.do(ctx, req)
}
