package wsbotserver

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.lastHeader = r.Header.Clone()
	authorized := s.auth == "" || r.Header.Get("Authorization") == s.auth
	if !authorized && !s.inBand {
		s.refused++
		s.mu.Unlock()
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if s.closed {
		s.mu.Unlock()
		http.Error(w, "closed", http.StatusServiceUnavailable)
		return
	}
	s.wg.Add(1) // under mu, so Close waits for it
	// Counted before the upgrade answers 101: a client that sees its
	// handshake done finds itself counted.
	s.connCount++
	s.mu.Unlock()
	defer s.wg.Done()

	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		s.mu.Lock()
		s.connCount--
		s.mu.Unlock()
		return // Upgrade answered
	}
	c := &conn{s: s, ws: ws, authorized: authorized, done: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ws.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	c.serve()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// conn is one client connection: a read loop (this handler's goroutine)
// and one goroutine per request, which writes its answer under wmu.
type conn struct {
	s          *Server
	ws         *websocket.Conn
	authorized bool

	wmu sync.Mutex // serialises data frames

	done      chan struct{}
	closeOnce sync.Once
	handlers  sync.WaitGroup

	seq   int // requests read, numbering them for the out-of-order batch
	bmu   sync.Mutex
	batch []held
	timer *time.Timer
}

// held is an answer waiting in the out-of-order batch.
type held struct {
	seq  int
	data []byte
}

func (c *conn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.ws.Close()
	})
}

func (c *conn) serve() {
	defer func() {
		c.close()
		c.handlers.Wait()
		c.bmu.Lock()
		if c.timer != nil {
			c.timer.Stop()
		}
		c.bmu.Unlock()
	}()
	c.ws.SetReadLimit(4 << 20)
	c.ws.SetPingHandler(c.pong)
	for {
		typ, data, err := c.ws.ReadMessage()
		if err != nil {
			return
		}
		if typ != websocket.TextMessage {
			continue
		}
		c.seq++
		seq := c.seq
		var req request
		if err := json.Unmarshal(data, &req); err != nil || req.Type != "request" || req.ID == "" {
			c.answer(seq, response{ID: req.ID, Type: "response", Error: &protoError{CodeInvalid, "not a request frame"}})
			continue
		}
		f, drop := c.s.admit(req.Action)
		if drop {
			return
		}
		c.handlers.Add(1)
		go c.reply(seq, req, f)
	}
}

// pong answers a ping unless the server ignores pings.
func (c *conn) pong(data string) error {
	c.s.mu.Lock()
	ignore := c.s.ignorePings
	c.s.mu.Unlock()
	if ignore {
		return nil
	}
	if err := c.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait)); err != nil {
		return nil // the read loop meets the broken link
	}
	c.s.mu.Lock()
	c.s.pongs++
	c.s.mu.Unlock()
	return nil
}

// faults is what the knobs do to one request.
type faults struct {
	delay, late time.Duration
	silent      bool
}

// admit counts a request and reads the knobs for its action; drop says the
// connection breaks instead (DropAfter).
func (s *Server) admit(action string) (f faults, drop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.dropAfter > 0 {
		s.dropAfter--
		drop = s.dropAfter == 0
	}
	delay, ok := s.delays[action]
	if !ok {
		delay = s.delays[""]
	}
	return faults{delay: delay, late: s.late[action], silent: s.silent[action]}, drop
}

// reply handles one request in its own goroutine, after the delay, and
// answers it, after its late delay, unless the action is silenced.
func (c *conn) reply(seq int, req request, f faults) {
	defer c.handlers.Done()
	if !c.wait(f.delay) {
		return
	}
	resp := response{ID: req.ID, Type: "response"}
	if !c.authorized {
		resp.Error = &protoError{CodeUnauthorized, "the credentials of this connection are not valid"}
	} else {
		resp.Result, resp.Error = c.s.handle(req.Action, req.Payload)
	}
	if f.silent || !c.wait(f.late) {
		return
	}
	c.answer(seq, resp)
}

// wait waits d, and reports false when the connection ends first.
func (c *conn) wait(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.done:
		return false
	}
}

// answer sends resp, the answer to the seq-th request, now or into the
// out-of-order batch.
func (c *conn) answer(seq int, resp response) {
	resp.OK = resp.Error == nil
	data, err := json.Marshal(resp)
	if err != nil {
		data, _ = json.Marshal(response{ID: resp.ID, Type: "response", Error: &protoError{CodeInvalid, err.Error()}})
	}
	c.s.mu.Lock()
	n := c.s.outOfOrder
	c.s.mu.Unlock()
	if n <= 1 {
		c.write(data)
		return
	}
	c.bmu.Lock()
	c.batch = append(c.batch, held{seq, data})
	if len(c.batch) < n {
		if c.timer == nil {
			c.timer = time.AfterFunc(flushAfter, c.flush)
		}
		c.bmu.Unlock()
		return
	}
	c.bmu.Unlock()
	c.flush()
}

// flush sends the held answers, the one to the latest request first.
func (c *conn) flush() {
	c.bmu.Lock()
	batch := c.batch
	c.batch = nil
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	c.bmu.Unlock()
	slices.SortFunc(batch, func(a, b held) int { return b.seq - a.seq })
	for _, h := range batch {
		c.write(h.data)
	}
}

func (c *conn) write(data []byte) {
	select {
	case <-c.done:
		return
	default:
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.ws.SetWriteDeadline(time.Now().Add(writeWait))
	if err := c.ws.WriteMessage(websocket.TextMessage, data); err != nil {
		c.close()
	}
}
