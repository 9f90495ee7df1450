package ehrhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/carebridge/carebridge/core"
)

// guard refuses, before anything is sent, a request that is missing or
// aimed elsewhere than the system's own origin (a URL taken from an answer
// must not carry credentials to another host): *core.Error
// "ehr_request_refused".
func guard(base *url.URL, errs translator) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			if req == nil || req.URL == nil {
				return nil, errs.refused("no request")
			}
			if !sameOrigin(req.URL, base) || req.URL.User != nil {
				return nil, errs.refused(fmt.Sprintf("refused a request to %s://%s, not the system's host",
					req.URL.Scheme, req.URL.Host))
			}
			return next(ctx, req)
		}
	}
}

func (t translator) refused(why string) error {
	return &core.Error{Kind: core.KindInternal, Code: "ehr_request_refused",
		Message: "request to " + t.name + " refused", Err: errors.New(why)}
}

// redirectPolicy follows redirects within base's origin only (an answer
// elsewhere is returned as it is), then applies the client's own policy,
// else the standard one (at most 10).
func redirectPolicy(base *url.URL, own func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, base) {
			return http.ErrUseLastResponse
		}
		if own != nil {
			return own(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
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
