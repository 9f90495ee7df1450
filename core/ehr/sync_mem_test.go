package ehr

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core"
)

// memSync is a SyncStore and a SyncRepo in memory with the rules of the
// PostgreSQL store (a lease per system with an expiry, a watermark that
// never goes back); its mocks' functions may be replaced by a test.
type memSync struct {
	*SyncStoreMock
	*SyncRepoMock
	mu      sync.Mutex
	now     time.Time // the database's clock
	cursors map[string]memCursor
	states  map[string]map[string]AppointmentState // system → id → state
	booked  map[string][]string                    // "system/appointment id" → businesses
	failure map[string]string                      // system → last poll's failure
	pending []memIntent                            // the API paths' intents, oldest first
}

type memIntent struct {
	PendingChange
	system  string
	expires time.Time
}

type memCursor struct {
	SyncCursor
	owner string
	until time.Time
}

func newMemSync() *memSync {
	m := &memSync{now: nowTest, cursors: map[string]memCursor{}, states: map[string]map[string]AppointmentState{},
		booked: map[string][]string{}, failure: map[string]string{}}
	m.SyncStoreMock = &SyncStoreMock{ClaimFunc: m.claim, PolledFunc: m.polled, KnownBetweenFunc: m.knownBetween}
	m.SyncRepoMock = &SyncRepoMock{HoldFunc: m.hold, KnownFunc: m.known, BookedFunc: m.bookedOf,
		RememberFunc: m.remember, AdvanceFunc: m.advance, RewindFunc: m.rewind, IntendFunc: m.intend, PendingFunc: m.pendingOf,
		DeferFunc: m.deferTo, SettleFunc: m.settle, WithdrawFunc: m.withdraw, LapseFunc: m.lapse}
	return m
}

func (m *memSync) claim(_ context.Context, system, owner string, lease time.Duration) (SyncCursor, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cursors[system]
	if c.owner != "" && c.owner != owner && c.until.After(m.now) {
		return SyncCursor{}, false, nil
	}
	c.owner, c.until = owner, m.now.Add(lease)
	m.cursors[system] = c
	return c.SyncCursor, true, nil
}

func (m *memSync) polled(_ context.Context, system, _, failure string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.failure[system] = failure
	return nil
}

func (m *memSync) knownBetween(_ context.Context, system string, from, to time.Time, max int) ([]AppointmentState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []AppointmentState
	for _, s := range m.states[system] {
		if s.Status != StatusCancelled && !s.Start.Before(from) && s.Start.Before(to) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b AppointmentState) int { return a.Start.Compare(b.Start) })
	return out[:min(len(out), max)], nil
}

func (m *memSync) hold(_ context.Context, system, owner string, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cursors[system]
	if c.owner != owner || !c.until.After(m.now) {
		return ErrSyncLeaseLost
	}
	c.until = m.now.Add(lease)
	m.cursors[system] = c
	return nil
}

func (m *memSync) known(_ context.Context, system string, ids []string) (map[string]AppointmentState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]AppointmentState{}
	for _, id := range ids {
		if s, ok := m.states[system][id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

func (m *memSync) bookedOf(_ context.Context, system string, ids []string) (map[string][]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]string{}
	for _, id := range ids {
		if b, ok := m.booked[system+"/"+id]; ok {
			out[id] = b
		}
	}
	return out, nil
}

func (m *memSync) remember(_ context.Context, system string, s AppointmentState) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states[system] == nil {
		m.states[system] = map[string]AppointmentState{}
	}
	m.states[system][s.ID] = s
	return nil
}

func (m *memSync) advance(_ context.Context, system string, to SyncCursor) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cursors[system]
	if to.Watermark.After(c.Watermark) {
		c.Watermark = to.Watermark
	}
	c.Baselined = c.Baselined || to.Baselined
	m.cursors[system] = c
	return nil
}

func (m *memSync) rewind(_ context.Context, system string, to time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.cursors[system]
	if c.Watermark.After(to) {
		c.Watermark = to
	}
	m.cursors[system] = c
	return nil
}

func (m *memSync) intend(_ context.Context, system string, p PendingChange, lease time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = append(m.pending, memIntent{PendingChange: p, system: system, expires: m.now.Add(lease)})
	return nil
}

func (m *memSync) pendingOf(_ context.Context, system string, ids []string) (map[string][]PendingChange, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]PendingChange{}
	for _, p := range m.pending {
		if p.system == system && slices.Contains(ids, p.AppointmentID) && !p.Deferred && !p.Lapsed && p.expires.After(m.now) {
			out[p.AppointmentID] = append(out[p.AppointmentID], p.PendingChange)
		}
	}
	return out, nil
}

// intent returns the index of system's intent id, or -1.
func (m *memSync) intent(system, id string) int {
	return slices.IndexFunc(m.pending, func(p memIntent) bool { return p.system == system && p.ID == id })
}

func (m *memSync) deferTo(_ context.Context, system, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.intent(system, id); i >= 0 {
		m.pending[i].Deferred = true
	}
	return nil
}

func (m *memSync) settle(_ context.Context, system, id string) (PendingChange, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.intent(system, id)
	if i < 0 {
		return PendingChange{}, false, nil
	}
	p := m.pending[i].PendingChange
	m.pending = slices.Delete(m.pending, i, i+1)
	return p, true, nil
}

func (m *memSync) withdraw(_ context.Context, system, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := m.intent(system, id); i >= 0 && !m.pending[i].Deferred {
		m.pending = slices.Delete(m.pending, i, i+1)
	}
	return nil
}

func (m *memSync) lapse(_ context.Context, system string, keep time.Duration, max int) ([]PendingChange, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending = slices.DeleteFunc(m.pending, func(p memIntent) bool {
		return p.system == system && p.Lapsed && p.expires.Before(m.now.Add(-keep))
	})
	var out []PendingChange
	for i, p := range m.pending {
		if p.system == system && !p.Lapsed && !p.expires.After(m.now) && len(out) < max {
			m.pending[i].Lapsed = true
			out = append(out, m.pending[i].PendingChange)
		}
	}
	return out, nil
}

// intents returns the intents kept.
func (m *memSync) intents() []PendingChange {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []PendingChange
	for _, p := range m.pending {
		out = append(out, p.PendingChange)
	}
	return out
}

// clock is the database's clock, which the tests' Syncers also take as
// this instance's (SyncConfig.Now).
func (m *memSync) clock() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// tick moves the database's clock on by d.
func (m *memSync) tick(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// cursor returns system's cursor.
func (m *memSync) cursor(system string) SyncCursor {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cursors[system].SyncCursor
}

// state returns system's state of appointment id.
func (m *memSync) state(system, id string) (AppointmentState, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.states[system][id]
	return s, ok
}

// snapshot and restore roll a transaction back.
type memSnapshot struct {
	cursors map[string]memCursor
	states  map[string]map[string]AppointmentState
	pending []memIntent
}

func (m *memSync) snapshot() memSnapshot {
	m.mu.Lock()
	defer m.mu.Unlock()
	states := map[string]map[string]AppointmentState{}
	for k, v := range m.states {
		states[k] = maps.Clone(v)
	}
	return memSnapshot{cursors: maps.Clone(m.cursors), states: states, pending: slices.Clone(m.pending)}
}

func (m *memSync) restore(s memSnapshot) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// The lease is not rolled back: Hold's renewal is, but keeping it
	// changes nothing a test looks at.
	m.cursors, m.states, m.pending = s.cursors, s.states, s.pending
}

// syncTx is a Transactor over a memSync whose transactions roll back: a
// failed one leaves no state, cursor or event.
type syncTx struct {
	sync   *memSync
	mu     sync.Mutex
	events []core.Event
	// emit, when set, is what Emit returns (a failing outbox).
	emit error
}

func (t *syncTx) WithinTx(ctx context.Context, fn func(context.Context, Repos) error) error {
	snap := t.sync.snapshot()
	o := &memOutbox{err: t.emit}
	if err := fn(ctx, Repos{Sync: t.sync, Outbox: o}); err != nil {
		t.sync.restore(snap)
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events = append(t.events, o.events...)
	return nil
}

func (t *syncTx) published() []core.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.events)
}

// memFeed is an EHR's change feed in memory: its appointments' current
// states, answered oldest first by UpdatedAt, as the adapters do, with the
// EHR's clock when set (zero: a feed that does not tell it).
type memFeed struct {
	*ChangeFeedMock
	mu      sync.Mutex
	changes map[string]AppointmentChange
	err     error
	clock   time.Time
}

// setClock sets the EHR's clock its answers tell.
func (f *memFeed) setClock(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clock = at
}

func newMemFeed() *memFeed {
	f := &memFeed{changes: map[string]AppointmentChange{}}
	f.ChangeFeedMock = &ChangeFeedMock{AppointmentChangesFunc: f.since}
	return f
}

// put stores a change of a at the EHR's time at, with version v.
func (f *memFeed) put(a Appointment, at time.Time, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.UpdatedAt = at
	f.changes[a.ID] = AppointmentChange{Appointment: a, Version: v}
}

func (f *memFeed) since(_ context.Context, since time.Time, max int) (ChangeBatch, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return ChangeBatch{}, f.err
	}
	var out []AppointmentChange
	for _, c := range f.changes {
		if c.Appointment.UpdatedAt.After(since) {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b AppointmentChange) int {
		if c := a.Appointment.UpdatedAt.Compare(b.Appointment.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Appointment.ID, b.Appointment.ID)
	})
	if len(out) > max {
		return ChangeBatch{Changes: out[:max], More: true, Clock: f.clock}, nil
	}
	return ChangeBatch{Changes: out, Clock: f.clock}, nil
}
