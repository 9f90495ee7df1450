package wsbot_test

import (
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// linkRecorder is a wsbot.Metrics that keeps what it is told.
type linkRecorder struct {
	mu         sync.Mutex
	up         []bool
	reconnects int
	states     []int
}

func (r *linkRecorder) LinkUp(up bool) {
	r.mu.Lock()
	r.up = append(r.up, up)
	r.mu.Unlock()
}

func (r *linkRecorder) Reconnect() {
	r.mu.Lock()
	r.reconnects++
	r.mu.Unlock()
}

func (r *linkRecorder) BreakerState(s int) {
	r.mu.Lock()
	r.states = append(r.states, s)
	r.mu.Unlock()
}

// now is the link gauge (false before any report) and the reconnections.
func (r *linkRecorder) now() (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.up) > 0 && r.up[len(r.up)-1], r.reconnects
}

func (r *linkRecorder) state() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.states) == 0 {
		return -1
	}
	return r.states[len(r.states)-1]
}

func TestMetrics_LinkStateAndReconnects(t *testing.T) {
	srv := wsbottest.Start(t)
	ids := seedAgents(srv, 1)
	m := &linkRecorder{}
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) { cfg.Metrics = m })
	if m.mu.Lock(); len(m.up) != 1 || m.up[0] || len(m.states) != 1 || m.states[0] != 0 {
		t.Errorf("New reported link %v, breaker %v; want down and closed", m.up, m.states)
	}
	m.mu.Unlock()

	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatal(err)
	}
	if up, n := m.now(); !up || n != 0 {
		t.Fatalf("after the first call: up %v, reconnects %d; want up, 0", up, n)
	}

	srv.DropAll()
	eventually(t, "the link to be reported down", func() bool { up, _ := m.now(); return !up })
	if _, err := c.GetAgent(t.Context(), ids[0]); err != nil {
		t.Fatalf("the call after the drop: %v", err)
	}
	if up, n := m.now(); !up || n != 1 {
		t.Errorf("after the reconnection: up %v, reconnects %d; want up, 1", up, n)
	}

	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if up, n := m.now(); up || n != 1 {
		t.Errorf("after Close: up %v, reconnects %d; want down, 1", up, n)
	}
}

func TestMetrics_BreakerStateOfTheBot(t *testing.T) {
	srv := wsbottest.Start(t)
	url := srv.URL()
	srv.Close() // nobody listens any more
	m := &linkRecorder{}
	c := newClient(t, url, func(cfg *wsbot.Config) {
		cfg.BreakerFailures = 2
		cfg.BreakerOpen = time.Minute
		cfg.Metrics = m
	})
	for range 2 {
		_, _ = c.ListAgents(t.Context(), ehr.AgentFilter{})
	}
	if s := m.state(); s != 2 {
		t.Errorf("breaker state %d after two failures, want 2 (open)", s)
	}
	if up, n := m.now(); up || n != 0 {
		t.Errorf("link up %v, reconnects %d; want down, 0 (no link was ever opened)", up, n)
	}
}
