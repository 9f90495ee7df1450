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
// appointments.reschedule, agents.list, agents.get, agents.availability,
// patients.search, records.search (unless WithoutRecords) and
// appointments.changes (unless WithoutChanges). Error codes: not_found, agent_unavailable (a booking
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
//     in the patient's name; identifier is "value" or "system|value";
//   - records.search: patientId and type (one of the nine FHIR type names)
//     are required (else invalid), an unknown patient has no records; from
//     and to are dates (YYYY-MM-DD, else invalid), inclusive by the day as
//     the record's date is written (ehr.InDateRange: a partial date is kept
//     when it overlaps the range, an undated record only without a range);
//     records come newest first by their date compared as text (undated
//     last), then by id; a quantity's value is a JSON number (see
//     AddRecord for the malformed one);
//   - every change of an appointment (through the protocol or the
//     methods AddAppointment, MoveAppointment and SetAppointmentStatus,
//     as the EHR's own screens) sets its updatedAt to now, to the
//     millisecond and strictly later than the change before
//     (StampAppointment sets one's updatedAt to any time, as a clock gone
//     wrong does, without moving the bot's);
//     appointments.changes answers {items} — every appointment whose
//     updatedAt is after since (RFC 3339; absent: all), in no particular
//     order (the client sorts).
package wsbotserver

import (
	"context"
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
	noRecords   bool      // records.search answers unknown_action
	noChanges   bool      // appointments.changes answers unknown_action
	lastChange  time.Time // updatedAt of the last change (tickLocked)
	delays      map[string]time.Duration
	late        map[string]time.Duration // actions carried out at once, answered after
	silent      map[string]bool          // actions carried out but never answered
	refusals    map[string]*protoError   // actions answered with an error (SetRefusal)
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
	records  map[string][]recordJSON // by patient id, in the order added
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
		late:   make(map[string]time.Duration),
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
// any string (a status the contract does not know, too), as a change made
// in the EHR's own screens (its updatedAt moves); false when there is no
// such appointment.
func (s *Server) SetAppointmentStatus(id, status string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.appts[id]
	if ok {
		a.status, a.updatedAt = status, s.tickLocked()
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

// SetLateAnswer makes the bot carry out action at once and hold its answer
// for d (0 removes it): a change already visible in the bot (its
// appointments.changes) before the caller hears of it.
func (s *Server) SetLateAnswer(action string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d <= 0 {
		delete(s.late, action)
		return
	}
	s.late[action] = d
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
