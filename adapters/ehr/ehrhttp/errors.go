package ehrhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
)

// failure is why an attempt got no answer, as the layers below translate
// report it: one type, its kind the classification the breaker, the
// retries and the translation read.
type failure struct {
	kind failKind
	wait time.Duration // failLimited: how far away the turn was
	err  error
}

type failKind uint8

const (
	failNetwork failKind = iota // the exchange failed
	failTimeout                 // no answer within the attempt's time-out
	failLimited                 // the rate limiter would make the caller wait too long
	failAuth                    // no credentials could be obtained
	failCaller                  // the caller's context ended
	failBody                    // the request body could not be replayed
)

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// ehrFault reports whether the failure says something of the EHR's
// health (the breaker counts it, and it is worth another attempt).
func (f *failure) ehrFault() bool { return f.kind == failNetwork || f.kind == failTimeout }

// asFailure is err's failure, or nil.
func asFailure(err error) *failure {
	var f *failure
	if errors.As(err, &f) {
		return f
	}
	return nil
}

// translate turns the failure a call ends with into the *core.Error Do
// returns (see the package documentation); a *core.Error passes as it is.
func translate(t translator) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			resp, err := next(ctx, req)
			if err != nil {
				return nil, t.coreError(ctx, err)
			}
			return resp, nil
		}
	}
}

// translator words the errors of one system, with its secrets masked.
type translator struct {
	name    string
	secrets []string
}

func (t translator) coreError(ctx context.Context, err error) error {
	var ce *core.Error
	f := asFailure(err)
	if f == nil && errors.As(err, &ce) {
		return err
	}
	if f == nil {
		f = &failure{kind: failNetwork, err: err}
	}
	switch f.kind {
	case failLimited:
		return &core.Error{Kind: core.KindRateLimited, Code: "rate_limited",
			Message: t.name + " is rate limited; try again later", RetryAfter: f.wait, Err: t.mask(f.err)}
	case failAuth:
		return t.authError(ctx, f.err)
	case failCaller:
		if errors.Is(f.err, context.DeadlineExceeded) {
			return t.timeout(f.err)
		}
		return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
			Message: "the request to " + t.name + " was cancelled", Err: f.err}
	case failTimeout:
		return t.timeout(t.mask(stripURL(f.err)))
	case failBody:
		return &core.Error{Kind: core.KindInternal, Code: "internal_error",
			Message: "the request to " + t.name + " could not be replayed", Err: t.mask(f.err)}
	default:
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable",
			Message: t.name + " could not be reached", Err: t.mask(stripURL(f.err))}
	}
}

func (t translator) timeout(cause error) *core.Error {
	return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
		Message: t.name + " did not answer in time", Err: cause}
}

// authError reports a failure to obtain credentials (the token endpoint).
func (t translator) authError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return t.coreError(ctx, &failure{kind: failCaller, err: ctx.Err()})
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return t.timeout(t.mask(err))
	}
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_auth_failed",
		Message: "authentication to " + t.name + " failed", Err: t.mask(tokenCause(err))}
}

// mask hides every configured secret in err's text.
func (t translator) mask(err error) error {
	if err == nil || len(t.secrets) == 0 {
		return err
	}
	return masked{err: err, words: t.secrets}
}

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
