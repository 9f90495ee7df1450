// Package wsbotserver is a WebSocket bot EHR, the fake behind the demo
// (cmd/carebridge-demo) and the tests (test/wsbottest wraps it): it speaks
// the contract's bot protocol (text frames of JSON requests and responses
// correlated by id) over a real WebSocket (net/http and
// gorilla/websocket) on 127.0.0.1, with an in-memory store of agents,
// appointments and patients, and knobs for fault injection. It links no
// test code.
//
//	srv, err := wsbotserver.Start(ctx, wsbotserver.WithAuthorization("Bearer t0ken"))
//	defer srv.Close()
//	id := srv.AddAgent(ehr.Agent{Name: "Ana Lopez"}, []ehr.Period{{Start: s, End: e}})
//	url := srv.URL() // ws://127.0.0.1:PORT/bot
//
// Actions (payloads and results as in the contract): appointments.create,
// appointments.list, appointments.get, appointments.cancel,
// appointments.reschedule, agents.list, agents.get, agents.availability and
// patients.search. Error codes: not_found, agent_unavailable (a booking
// that overlaps a booked appointment or falls outside the agent's free
// time), conflict (cancelling or rescheduling a cancelled appointment),
// invalid (a malformed frame or payload), unauthorized (see
// WithUnauthorizedInBand) and unknown_action.
//
// Details the contract leaves open, as this bot does them:
//   - times are RFC 3339; the from and to of appointments.list and
//     agents.availability may also be dates (YYYY-MM-DD, inclusive: in the
//     agent's time zone for availability, in UTC for the list);
//   - agents.availability answers the agent's free spans less booked
//     appointments, clipped to [from, to); with a duration (minutes) above
//     0 the spans are cut into consecutive slots of that length;
//   - every status but cancelled (and no_show) blocks the agent's time;
//   - lists page from 1 with a default limit of 20 (at most 100); agents
//     in the order they were added, appointments by start;
//   - agents.list: name is a case-insensitive "contains" on the name,
//     specialty a case-insensitive match, locationId one of the agent's;
//   - patients.search: every word of query must occur (case-insensitive)
//     in the patient's name; identifier is "value" or "system|value".
package wsbotserver

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/carebridge/carebridge/core/ehr"
)

// Path is where the bot accepts WebSocket connections.
const Path = "/bot"

// The protocol's error codes.
const (
	CodeNotFound         = "not_found"
	CodeAgentUnavailable = "agent_unavailable"
	CodeConflict         = "conflict"
	CodeInvalid          = "invalid"
	CodeUnauthorized     = "unauthorized"
	CodeUnknownAction    = "unknown_action"
)

const (
	defaultLimit = 20
	maxLimit     = 100
	writeWait    = 5 * time.Second
	// flushAfter is how long out-of-order answers are held for a batch to
	// fill.
	flushAfter = 100 * time.Millisecond
)

// Option configures Start.
type Option func(*Server)

// WithAuthorization makes the bot require this exact Authorization header
// on the handshake; a handshake without it is refused with HTTP 401.
func WithAuthorization(value string) Option { return func(s *Server) { s.auth = value } }

// WithUnauthorizedInBand makes the bot accept a handshake with a wrong
// Authorization header and answer each of its requests with the error code
// unauthorized instead of refusing it.
func WithUnauthorizedInBand() Option { return func(s *Server) { s.inBand = true } }

// Server is a running bot. Its methods are safe for concurrent use.
type Server struct {
	hs       *http.Server
	url      string // http://127.0.0.1:PORT
	upgrader websocket.Upgrader
	wg       sync.WaitGroup // connection goroutines

	mu          sync.Mutex
	closed      bool
	auth        string
	inBand      bool
	delays      map[string]time.Duration
	silent      map[string]bool // actions carried out but never answered
	ignorePings bool
	outOfOrder  int
	dropAfter   int // > 0: requests left before the drop; 0: none armed
	conns       map[*conn]struct{}
	connCount   int
	refused     int
	requests    int
	pongs       int
	lastHeader  http.Header

	seq      int
	agents   map[string]*agent
	order    []string // agent ids in the order added
	appts    map[string]*appointment
	patients []ehr.Patient
}

type agent struct {
	a    ehr.Agent
	free []ehr.Period
}

type appointment struct {
	id, agentID          string
	start, end           time.Time
	status               string
	reason, locationID   string
	patient              patientContact
	cancelReason         string
	externalID           string // the booking's reference the client sent, else the id
	createdAt, updatedAt time.Time
}

// Start starts a bot on a free 127.0.0.1 port (ctx bounds the start
// only); Close stops it.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	s := &Server{
		delays: make(map[string]time.Duration),
		silent: make(map[string]bool),
		conns:  make(map[*conn]struct{}),
		agents: make(map[string]*agent),
		appts:  make(map[string]*appointment),
	}
	for _, o := range opts {
		o(s)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("wsbotserver: listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.serveWS)
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: writeWait}
	s.url = "http://" + ln.Addr().String()
	go s.hs.Serve(ln) // returns http.ErrServerClosed on Close
	return s, nil
}

// URL is the bot's ws:// URL.
func (s *Server) URL() string { return "ws" + strings.TrimPrefix(s.url, "http") + Path }

// Close drops every connection and stops the bot; it returns when the
// bot's goroutines have ended.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.mu.Unlock()
	s.DropAll()
	s.hs.Close()
	s.wg.Wait()
}

// AddAgent stores a (under a.ID, or a new id when it is empty or taken),
// free during free and busy otherwise, and returns its id.
func (s *Server) AddAgent(a ehr.Agent, free []ehr.Period) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, taken := s.agents[a.ID]; a.ID == "" || taken {
		s.seq++
		a.ID = fmt.Sprintf("agent-%d", s.seq)
	}
	a.LocationIDs = slices.Clone(a.LocationIDs)
	s.agents[a.ID] = &agent{a: a, free: slices.Clone(free)}
	s.order = append(s.order, a.ID)
	return a.ID
}

// AddPatient stores p (under p.ID, or a new id when it is empty) for
// patients.search and returns its id.
func (s *Server) AddPatient(p ehr.Patient) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.ID == "" {
		s.seq++
		p.ID = fmt.Sprintf("patient-%d", s.seq)
	}
	s.patients = append(s.patients, p)
	return p.ID
}

// SetAppointmentStatus overwrites the stored status of an appointment with
// any string (a status the contract does not know, too); false when there
// is no such appointment.
func (s *Server) SetAppointmentStatus(id, status string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.appts[id]
	if ok {
		a.status = status
	}
	return ok
}

// SetAuthorization changes the Authorization header value the handshake
// needs ("" accepts any handshake).
func (s *Server) SetAuthorization(value string) {
	s.mu.Lock()
	s.auth = value
	s.mu.Unlock()
}

// SetDelay holds the answers to action ("" for every action without a
// delay of its own) for d before sending them; 0 removes the delay.
func (s *Server) SetDelay(action string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.delays, action)
		return
	}
	s.delays[action] = d
}

// AppointmentCount is how many appointments the bot holds, cancelled ones
// included.
func (s *Server) AppointmentCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.appts)
}

// SetSilent makes the bot carry out action (an appointment is stored, say)
// and then never answer it (true), or answer it again (false): a booking
// whose answer is lost.
func (s *Server) SetSilent(action string, silent bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.silent[action] = silent
}

// IgnorePings makes the bot stop (true) or resume (false) answering pings
// with pongs.
func (s *Server) IgnorePings(ignore bool) {
	s.mu.Lock()
	s.ignorePings = ignore
	s.mu.Unlock()
}

// SetOutOfOrder makes each connection hold its answers until n are ready
// (or 100 ms have passed since the first) and send them in the reverse
// order of their requests; n ≤ 1 answers each as soon as it is ready.
func (s *Server) SetOutOfOrder(n int) {
	s.mu.Lock()
	s.outOfOrder = n
	s.mu.Unlock()
}

// DropAfter arms a drop: after n more requests, the connection that
// receives the next one is closed abruptly (no close frame) without
// answering it. n < 0 disarms.
func (s *Server) DropAfter(n int) {
	s.mu.Lock()
	s.dropAfter = n + 1
	if n < 0 {
		s.dropAfter = 0
	}
	s.mu.Unlock()
}

// DropAll closes every open connection abruptly (no close frame); the
// requests they carry go unanswered.
func (s *Server) DropAll() {
	s.mu.Lock()
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Connections is how many WebSocket connections the bot has accepted.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connCount
}

// OpenConnections is how many connections are open now.
func (s *Server) OpenConnections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Refused is how many handshakes the bot refused for their credentials.
func (s *Server) Refused() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

// Requests is how many request frames the bot has received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Pongs is how many pings the bot has answered.
func (s *Server) Pongs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pongs
}

// LastHeader is the header of the last handshake the bot saw (refused ones
// included), or nil.
func (s *Server) LastHeader() http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastHeader.Clone()
}

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
	c.ws.SetPingHandler(func(data string) error {
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
	})
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
		s := c.s
		s.mu.Lock()
		s.requests++
		drop := false
		if s.dropAfter > 0 {
			s.dropAfter--
			drop = s.dropAfter == 0
		}
		delay, ok := s.delays[req.Action]
		if !ok {
			delay = s.delays[""]
		}
		silent := s.silent[req.Action]
		s.mu.Unlock()
		if drop {
			return
		}
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			if delay > 0 {
				t := time.NewTimer(delay)
				select {
				case <-t.C:
				case <-c.done:
					t.Stop()
					return
				}
			}
			resp := response{ID: req.ID, Type: "response"}
			if !c.authorized {
				resp.Error = &protoError{CodeUnauthorized, "the credentials of this connection are not valid"}
			} else {
				resp.Result, resp.Error = s.handle(req.Action, req.Payload)
			}
			if silent {
				return
			}
			c.answer(seq, resp)
		}()
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

// The frames.
type (
	request struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Action  string          `json:"action"`
		Payload json.RawMessage `json:"payload"`
	}
	response struct {
		ID     string      `json:"id"`
		Type   string      `json:"type"`
		OK     bool        `json:"ok"`
		Result any         `json:"result,omitempty"`
		Error  *protoError `json:"error,omitempty"`
	}
	protoError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

func fail(code, format string, args ...any) *protoError {
	return &protoError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// The payloads and results.
type (
	agentJSON struct {
		ID          string   `json:"id"`
		FirstName   string   `json:"firstName"`
		LastName    string   `json:"lastName"`
		Name        string   `json:"name"`
		Specialty   string   `json:"specialty"`
		Email       string   `json:"email"`
		Timezone    string   `json:"timezone"`
		LocationIDs []string `json:"locationIds"`
	}
	patientContact struct {
		FirstName   string `json:"firstName"`
		LastName    string `json:"lastName"`
		DateOfBirth string `json:"dateOfBirth"`
		Email       string `json:"email"`
		Phone       string `json:"phone"`
	}
	appointmentJSON struct {
		ID         string         `json:"id"`
		AgentID    string         `json:"agentId"`
		Start      string         `json:"start"`
		End        string         `json:"end"`
		Status     string         `json:"status"`
		Reason     string         `json:"reason"`
		LocationID string         `json:"locationId"`
		Patient    patientContact `json:"patient"`
		Source     string         `json:"source"`
		ExternalID string         `json:"externalId"`
		CreatedAt  string         `json:"createdAt"`
		UpdatedAt  string         `json:"updatedAt"`
	}
	slotJSON struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	availabilityJSON struct {
		AgentID  string     `json:"agentId"`
		Timezone string     `json:"timezone"`
		Slots    []slotJSON `json:"slots"`
	}
	patientJSON struct {
		ID          string           `json:"id"`
		Name        nameJSON         `json:"name"`
		BirthDate   string           `json:"birthDate"`
		Gender      string           `json:"gender"`
		Identifiers []identifierJSON `json:"identifiers"`
		Telecom     []telecomJSON    `json:"telecom"`
		Address     []addressJSON    `json:"address"`
		LastUpdated string           `json:"lastUpdated,omitempty"`
	}
	nameJSON struct {
		Family string   `json:"family"`
		Given  []string `json:"given"`
		Text   string   `json:"text"`
	}
	identifierJSON struct {
		System string `json:"system"`
		Value  string `json:"value"`
		Type   string `json:"type"`
	}
	telecomJSON struct {
		System string `json:"system"`
		Value  string `json:"value"`
		Use    string `json:"use"`
	}
	addressJSON struct {
		Line       []string `json:"line"`
		City       string   `json:"city"`
		State      string   `json:"state"`
		PostalCode string   `json:"postalCode"`
		Country    string   `json:"country"`
	}
	listJSON[T any] struct {
		Items      []T `json:"items"`
		TotalCount int `json:"totalCount"`
		Page       int `json:"page"`
		Limit      int `json:"limit"`
	}
	paging struct{ Page, Limit int }
)

// Source is the source the bot writes on its appointments.
const Source = "wsbottest"

func (s *Server) handle(action string, payload json.RawMessage) (any, *protoError) {
	switch action {
	case "agents.list":
		return s.listAgents(payload)
	case "agents.get":
		return s.getAgent(payload)
	case "agents.availability":
		return s.availability(payload)
	case "appointments.create":
		return s.create(payload)
	case "appointments.list":
		return s.listAppointments(payload)
	case "appointments.get":
		return s.getAppointment(payload)
	case "appointments.cancel":
		return s.cancel(payload)
	case "appointments.reschedule":
		return s.reschedule(payload)
	case "patients.search":
		return s.searchPatients(payload)
	default:
		return nil, fail(CodeUnknownAction, "unknown action %q", action)
	}
}

func decode(payload json.RawMessage, v any) *protoError {
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fail(CodeInvalid, "malformed payload: %v", err)
	}
	return nil
}

func (p paging) resolve() (page, limit int, e *protoError) {
	page, limit = p.Page, p.Limit
	if page < 0 || limit < 0 {
		return 0, 0, fail(CodeInvalid, "page and limit must not be negative")
	}
	if page == 0 {
		page = 1
	}
	if limit == 0 {
		limit = defaultLimit
	}
	return page, min(limit, maxLimit), nil
}

func pageOf[T any](all []T, page, limit int) listJSON[T] {
	from := min((page-1)*limit, len(all))
	to := min(from+limit, len(all))
	items := all[from:to]
	if items == nil {
		items = []T{}
	}
	return listJSON[T]{Items: items, TotalCount: len(all), Page: page, Limit: limit}
}

func toAgentJSON(a ehr.Agent) agentJSON {
	loc := a.LocationIDs
	if loc == nil {
		loc = []string{}
	}
	return agentJSON{ID: a.ID, FirstName: a.FirstName, LastName: a.LastName, Name: a.Name,
		Specialty: a.Specialty, Email: a.Email, Timezone: a.Timezone, LocationIDs: loc}
}

func (s *Server) listAgents(payload json.RawMessage) (any, *protoError) {
	var p struct {
		Name       string `json:"name"`
		Specialty  string `json:"specialty"`
		LocationID string `json:"locationId"`
		Page       int    `json:"page"`
		Limit      int    `json:"limit"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	page, limit, e := paging{p.Page, p.Limit}.resolve()
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []agentJSON
	for _, id := range s.order {
		a := s.agents[id].a
		if p.Name != "" && !strings.Contains(strings.ToLower(a.Name), strings.ToLower(p.Name)) {
			continue
		}
		if p.Specialty != "" && !strings.EqualFold(a.Specialty, p.Specialty) {
			continue
		}
		if p.LocationID != "" && !slices.Contains(a.LocationIDs, p.LocationID) {
			continue
		}
		all = append(all, toAgentJSON(a))
	}
	return pageOf(all, page, limit), nil
}

type idPayload struct {
	ID string `json:"id"`
}

func (s *Server) getAgent(payload json.RawMessage) (any, *protoError) {
	var p idPayload
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.ID == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.ID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.ID)
	}
	return toAgentJSON(a.a), nil
}

// parseInstant reads an RFC 3339 time, or a date (its midnight in loc;
// with end set, the midnight after it, so the date is inclusive).
func parseInstant(s string, loc *time.Location, end bool) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func (s *Server) availability(payload json.RawMessage) (any, *protoError) {
	var p struct {
		AgentID  string `json:"agentId"`
		From     string `json:"from"`
		To       string `json:"to"`
		Duration int    `json:"duration"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.AgentID == "" {
		return nil, fail(CodeInvalid, "agentId is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.AgentID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.AgentID)
	}
	loc, err := time.LoadLocation(a.a.Timezone)
	if err != nil {
		loc = time.UTC
	}
	from, err1 := parseInstant(p.From, loc, false)
	to, err2 := parseInstant(p.To, loc, true)
	if err1 != nil || err2 != nil || !to.After(from) || p.Duration < 0 {
		return nil, fail(CodeInvalid, "from and to must be times or dates with from before to, duration not negative")
	}
	free := s.freeLocked(a, from, to, "")
	slots := []slotJSON{}
	for _, f := range free {
		if p.Duration <= 0 {
			slots = append(slots, slotJSON{f.Start.Format(time.RFC3339), f.End.Format(time.RFC3339)})
			continue
		}
		d := time.Duration(p.Duration) * time.Minute
		for t := f.Start; !t.Add(d).After(f.End); t = t.Add(d) {
			slots = append(slots, slotJSON{t.Format(time.RFC3339), t.Add(d).Format(time.RFC3339)})
		}
	}
	return availabilityJSON{AgentID: a.a.ID, Timezone: a.a.Timezone, Slots: slots}, nil
}

// freeLocked is a's free time in [from, to) less the appointments that
// block it (but the one called except), sorted.
func (s *Server) freeLocked(a *agent, from, to time.Time, except string) []ehr.Period {
	var free []ehr.Period
	for _, f := range a.free {
		if f.Start.Before(from) {
			f.Start = from
		}
		if f.End.After(to) {
			f.End = to
		}
		if f.End.After(f.Start) {
			free = append(free, f)
		}
	}
	for _, ap := range s.appts {
		if ap.agentID != a.a.ID || ap.id == except || !blocks(ap.status) {
			continue
		}
		var next []ehr.Period
		for _, f := range free {
			if !ap.start.Before(f.End) || !ap.end.After(f.Start) {
				next = append(next, f)
				continue
			}
			if ap.start.After(f.Start) {
				next = append(next, ehr.Period{Start: f.Start, End: ap.start})
			}
			if ap.end.Before(f.End) {
				next = append(next, ehr.Period{Start: ap.end, End: f.End})
			}
		}
		free = next
	}
	slices.SortFunc(free, func(x, y ehr.Period) int { return x.Start.Compare(y.Start) })
	return free
}

func blocks(status string) bool { return status != "cancelled" && status != "no_show" }

// fitsLocked reports whether [start, end) lies in one free span of a.
func (s *Server) fitsLocked(a *agent, start, end time.Time, except string) bool {
	for _, f := range s.freeLocked(a, start, end, except) {
		if !f.Start.After(start) && !f.End.Before(end) {
			return true
		}
	}
	return false
}

func (ap *appointment) json() appointmentJSON {
	return appointmentJSON{
		ID: ap.id, AgentID: ap.agentID,
		Start: ap.start.Format(time.RFC3339Nano), End: ap.end.Format(time.RFC3339Nano),
		Status: ap.status, Reason: ap.reason, LocationID: ap.locationID, Patient: ap.patient,
		Source: Source, ExternalID: cmp.Or(ap.externalID, ap.id),
		CreatedAt: ap.createdAt.Format(time.RFC3339Nano), UpdatedAt: ap.updatedAt.Format(time.RFC3339Nano),
	}
}

func parseSpan(start, end string) (time.Time, time.Time, *protoError) {
	st, err1 := time.Parse(time.RFC3339Nano, start)
	en, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil {
		return st, en, fail(CodeInvalid, "start and end must be RFC 3339 times")
	}
	if !en.After(st) {
		return st, en, fail(CodeInvalid, "end must be after start")
	}
	return st, en, nil
}

func (s *Server) create(payload json.RawMessage) (any, *protoError) {
	var p struct {
		AgentID    string         `json:"agentId"`
		Start      string         `json:"start"`
		End        string         `json:"end"`
		Reason     string         `json:"reason"`
		LocationID string         `json:"locationId"`
		Patient    patientContact `json:"patient"`
		ExternalID string         `json:"externalId"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.AgentID == "" {
		return nil, fail(CodeInvalid, "agentId is required")
	}
	start, end, e := parseSpan(p.Start, p.End)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.AgentID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.AgentID)
	}
	if !s.fitsLocked(a, start, end, "") {
		return nil, fail(CodeAgentUnavailable, "the agent is not free then")
	}
	s.seq++
	now := time.Now().UTC().Truncate(time.Millisecond)
	ap := &appointment{
		id: fmt.Sprintf("apt-%d", s.seq), agentID: p.AgentID, start: start, end: end, status: "booked",
		reason: p.Reason, locationID: p.LocationID, patient: p.Patient, externalID: p.ExternalID, createdAt: now, updatedAt: now,
	}
	s.appts[ap.id] = ap
	return ap.json(), nil
}

func (s *Server) listAppointments(payload json.RawMessage) (any, *protoError) {
	var p struct {
		AgentID      string `json:"agentId"`
		Status       string `json:"status"`
		From         string `json:"from"`
		To           string `json:"to"`
		PatientEmail string `json:"patientEmail"`
		Page         int    `json:"page"`
		Limit        int    `json:"limit"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	page, limit, e := paging{p.Page, p.Limit}.resolve()
	if e != nil {
		return nil, e
	}
	var from, to time.Time
	var err error
	if p.From != "" {
		if from, err = parseInstant(p.From, time.UTC, false); err != nil {
			return nil, fail(CodeInvalid, "from must be a time or a date")
		}
	}
	if p.To != "" {
		if to, err = parseInstant(p.To, time.UTC, true); err != nil {
			return nil, fail(CodeInvalid, "to must be a time or a date")
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var matched []*appointment
	for _, ap := range s.appts {
		switch {
		case p.AgentID != "" && ap.agentID != p.AgentID,
			p.Status != "" && ap.status != p.Status,
			!from.IsZero() && ap.start.Before(from),
			!to.IsZero() && !ap.start.Before(to),
			p.PatientEmail != "" && !strings.EqualFold(ap.patient.Email, p.PatientEmail):
			continue
		}
		matched = append(matched, ap)
	}
	slices.SortFunc(matched, func(x, y *appointment) int {
		if c := x.start.Compare(y.start); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	all := make([]appointmentJSON, len(matched))
	for i, ap := range matched {
		all[i] = ap.json()
	}
	return pageOf(all, page, limit), nil
}

func (s *Server) getAppointment(payload json.RawMessage) (any, *protoError) {
	var p idPayload
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.ID == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.appts[p.ID]
	if !ok {
		return nil, fail(CodeNotFound, "no appointment %q", p.ID)
	}
	return ap.json(), nil
}

func (s *Server) cancel(payload json.RawMessage) (any, *protoError) {
	var p struct {
		ID     string `json:"id"`
		Reason string `json:"reason"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.ID == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.appts[p.ID]
	if !ok {
		return nil, fail(CodeNotFound, "no appointment %q", p.ID)
	}
	if ap.status == "cancelled" {
		return nil, fail(CodeConflict, "the appointment is already cancelled")
	}
	ap.status, ap.cancelReason = "cancelled", p.Reason
	ap.updatedAt = time.Now().UTC().Truncate(time.Millisecond)
	return ap.json(), nil
}

func (s *Server) reschedule(payload json.RawMessage) (any, *protoError) {
	var p struct {
		ID    string `json:"id"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.ID == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	start, end, e := parseSpan(p.Start, p.End)
	s.mu.Lock()
	defer s.mu.Unlock()
	ap, ok := s.appts[p.ID]
	if !ok {
		return nil, fail(CodeNotFound, "no appointment %q", p.ID)
	}
	if e != nil {
		return nil, e
	}
	if ap.status == "cancelled" {
		return nil, fail(CodeConflict, "the appointment is cancelled")
	}
	a, ok := s.agents[ap.agentID]
	if !ok || !s.fitsLocked(a, start, end, ap.id) {
		return nil, fail(CodeAgentUnavailable, "the agent is not free then")
	}
	ap.start, ap.end = start, end
	ap.updatedAt = time.Now().UTC().Truncate(time.Millisecond)
	return ap.json(), nil
}

func (s *Server) searchPatients(payload json.RawMessage) (any, *protoError) {
	var p struct {
		Query      string `json:"query"`
		Birthdate  string `json:"birthdate"`
		Gender     string `json:"gender"`
		Identifier string `json:"identifier"`
		Page       int    `json:"page"`
		Limit      int    `json:"limit"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	page, limit, e := paging{p.Page, p.Limit}.resolve()
	if e != nil {
		return nil, e
	}
	words := strings.Fields(strings.ToLower(p.Query))
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []patientJSON
	for _, pt := range s.patients {
		name := strings.ToLower(pt.Name.Text + " " + strings.Join(pt.Name.Given, " ") + " " + pt.Name.Family)
		if !allIn(words, name) ||
			p.Birthdate != "" && pt.BirthDate != p.Birthdate ||
			p.Gender != "" && !strings.EqualFold(pt.Gender, p.Gender) ||
			p.Identifier != "" && !hasIdentifier(pt.Identifiers, p.Identifier) {
			continue
		}
		out := toPatientJSON(pt)
		if !pt.LastUpdated.IsZero() {
			out.LastUpdated = pt.LastUpdated.Format(time.RFC3339Nano)
		}
		all = append(all, out)
	}
	return pageOf(all, page, limit), nil
}

// toPatientJSON is p in the bot's wire shape (its own: the ehr types carry
// no JSON tags).
func toPatientJSON(p ehr.Patient) patientJSON {
	return patientJSON{
		ID:        p.ID,
		Name:      nameJSON{Family: p.Name.Family, Given: p.Name.Given, Text: p.Name.Text},
		BirthDate: p.BirthDate,
		Gender:    p.Gender,
		Identifiers: convertAll(p.Identifiers, func(id ehr.Identifier) identifierJSON {
			return identifierJSON{System: id.System, Value: id.Value, Type: id.Type}
		}),
		Telecom: convertAll(p.Telecom, func(t ehr.ContactPoint) telecomJSON {
			return telecomJSON{System: t.System, Value: t.Value, Use: t.Use}
		}),
		Address: convertAll(p.Address, func(a ehr.Address) addressJSON {
			return addressJSON{Line: a.Line, City: a.City, State: a.State, PostalCode: a.PostalCode, Country: a.Country}
		}),
	}
}

// convertAll converts every element of in; nil stays nil (JSON null).
func convertAll[A, B any](in []A, conv func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

func allIn(words []string, s string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func hasIdentifier(ids []ehr.Identifier, q string) bool {
	system, value, qualified := strings.Cut(q, "|")
	if !qualified {
		value = system
	}
	for _, id := range ids {
		if id.Value == value && (!qualified || id.System == system) {
			return true
		}
	}
	return false
}
