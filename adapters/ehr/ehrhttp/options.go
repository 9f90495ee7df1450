package ehrhttp

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

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

func newOptions(opts []Option) options {
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
	return o
}

// httpClients returns the client of the EHR's requests (a copy of the
// given one, with the redirect policy of base) and the client of the
// token endpoint (with timeout when it has none).
func (o options) httpClients(base *url.URL, timeout time.Duration) (hc, token *http.Client) {
	hc = &http.Client{}
	if o.client != nil {
		cp := *o.client
		hc = &cp
	}
	tc := *hc
	if tc.Timeout == 0 {
		tc.Timeout = timeout
	}
	hc.CheckRedirect = redirectPolicy(base, hc.CheckRedirect)
	return hc, &tc
}

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
