package ehrhttp

import (
	"context"
	"net/http"
)

// doer sends a request under ctx (req's own context is not used): the
// shape of every layer of the stack.
type doer func(ctx context.Context, req *http.Request) (*http.Response, error)

// middleware is one layer: it wraps the layers below it.
type middleware func(next doer) doer

// chain stacks mws on top of last: the first of mws is the outermost,
// the one a request meets first.
func chain(last doer, mws ...middleware) doer {
	d := last
	for i := len(mws) - 1; i >= 0; i-- {
		d = mws[i](d)
	}
	return d
}

// call is what the layers of one Do call share: what the log line and
// the metrics tell, and what the token refresh and the body replay need.
type call struct {
	attempts int    // attempts made (the first included)
	status   int    // the last HTTP status the EHR answered; 0: none
	gen      uint64 // the OAuth2 token generation of the last attempt
	sent     bool   // req.Body was used: later attempts need GetBody
}

type callKey struct{}

// withCall starts the record of a call.
func withCall(ctx context.Context) (context.Context, *call) {
	c := &call{}
	return context.WithValue(ctx, callKey{}, c), c
}

// ensureCall is ctx with a call record, starting one when it has none
// (a layer that needs the record across attempts used on its own).
func ensureCall(ctx context.Context) context.Context {
	if _, ok := ctx.Value(callKey{}).(*call); ok {
		return ctx
	}
	ctx, _ = withCall(ctx)
	return ctx
}

// callOf is the record of ctx's call; a blank one when none was started
// (a layer used on its own).
func callOf(ctx context.Context) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		return c
	}
	return &call{}
}
