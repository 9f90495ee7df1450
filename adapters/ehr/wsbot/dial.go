package wsbot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/gorilla/websocket"
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
