package wsbot

import (
	"encoding/json"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// link is one WebSocket connection to the bot: the reader goroutine hands
// each answer to the call waiting for its id; the writer goroutine sends
// the request frames (in the order they were queued) and the pings.
type link struct {
	c    *Client
	ws   *websocket.Conn
	out  chan []byte   // request frames for the writer
	done chan struct{} // closed when the link is dead

	mu      sync.Mutex
	pending map[string]chan answer // nil once dead
	err     error                  // why it died; set before done is closed

	// answered is set by the first answer: the link was healthy.
	answered atomic.Bool
	// reported is set by the first call told of the link's death, the
	// only one the circuit breaker counts (one drop, one failure).
	reported atomic.Bool
}

// answer is the response to one request.
type answer struct {
	ok     bool
	result json.RawMessage
	err    *wireError
}

// responseFrame is an answer as it comes over the wire.
type responseFrame struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *wireError      `json:"error"`
}

type wireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newLink(c *Client, ws *websocket.Conn) *link {
	return &link{
		c:       c,
		ws:      ws,
		out:     make(chan []byte, outQueue),
		done:    make(chan struct{}),
		pending: make(map[string]chan answer),
	}
}

// register makes room for the answer to id; it fails when the link is
// dead.
func (l *link) register(id string) (chan answer, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		return nil, l.reportLocked()
	}
	ch := make(chan answer, 1)
	l.pending[id] = ch
	return ch, nil
}

// forget drops the call id (it gave up waiting); a late answer is ignored.
func (l *link) forget(id string) {
	l.mu.Lock()
	if l.pending != nil {
		delete(l.pending, id)
	}
	l.mu.Unlock()
}

func (l *link) dead() bool {
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// deadErr is the error a call sees when the link died under it.
func (l *link) deadErr() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reportLocked()
}

func (l *link) reportLocked() error {
	if l.reported.CompareAndSwap(false, true) {
		return l.err
	}
	return once(l.err)
}

// fail kills the link with err (the first cause wins): the calls waiting
// on it see done closed, the socket is closed (which ends both loops) and
// the client is told.
func (l *link) fail(err error) { l.end(err, false) }

// end is fail, with a close frame first when graceful (Client.Close).
func (l *link) end(err error, graceful bool) {
	l.mu.Lock()
	if l.pending == nil {
		l.mu.Unlock()
		return
	}
	l.err = err
	l.pending = nil
	close(l.done)
	l.mu.Unlock()
	if graceful {
		// Best effort: a peer that is gone cannot be told goodbye, and the
		// socket is closed next either way.
		_ = l.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	}
	if err := l.ws.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		l.c.log.Warn("wsbot could not close its socket", "error", err)
	}
	l.c.linkDead(l, err)
}

// readDeadline is how long the link waits for the next pong.
func (l *link) readDeadline() time.Time {
	return time.Now().Add(l.c.pingInterval + l.c.pongTimeout)
}

func (l *link) readLoop() {
	defer l.c.wg.Done()
	_ = l.ws.SetReadDeadline(l.readDeadline())
	l.ws.SetPongHandler(func(string) error { return l.ws.SetReadDeadline(l.readDeadline()) })
	for {
		typ, data, err := l.ws.ReadMessage()
		if err != nil {
			l.fail(l.readError(err))
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		var f responseFrame
		if err := json.Unmarshal(data, &f); err != nil {
			l.c.log.Warn("wsbot ignored a malformed frame", "error", err, "bytes", len(data))
			continue
		}
		if f.Type != "response" && f.Type != "" {
			l.c.log.Debug("wsbot ignored a frame that is not a response", "type", clip(f.Type))
			continue
		}
		l.mu.Lock()
		ch := l.pending[f.ID]
		delete(l.pending, f.ID)
		l.mu.Unlock()
		if ch == nil {
			l.c.log.Debug("wsbot ignored an answer nobody waits for", "id", clip(f.ID))
			continue
		}
		if !l.answered.Load() {
			l.answered.Store(true)
		}
		ch <- answer{ok: f.OK, result: f.Result, err: f.Error} // buffered; each id is answered once
	}
}

// readError explains why reading stopped.
func (l *link) readError(err error) error {
	var (
		ce *websocket.CloseError
		ne net.Error
	)
	switch {
	case errors.As(err, &ce):
		return l.c.unreachable("closed the connection", err)
	case errors.As(err, &ne) && ne.Timeout():
		return l.c.timeoutError("stopped answering pings", err)
	default:
		return l.c.unreachable("dropped the connection", err)
	}
}

func (l *link) writeLoop() {
	defer l.c.wg.Done()
	ping := time.NewTicker(l.c.pingInterval)
	defer ping.Stop()
	for {
		select {
		case <-l.done:
			return
		case frame := <-l.out:
			_ = l.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := l.ws.WriteMessage(websocket.TextMessage, frame); err != nil {
				l.fail(l.c.unreachable("could not be written to", err))
				return
			}
		case <-ping.C:
			if err := l.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				l.fail(l.c.unreachable("could not be pinged", err))
				return
			}
		}
	}
}
