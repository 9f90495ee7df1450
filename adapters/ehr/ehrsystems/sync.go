package ehrsystems

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// EHR sync (issue 21): every instance runs a poller per EHR system with
// sync on; a lease in PostgreSQL lets one instance at a time poll a
// system (ehr.Syncer), so each change becomes one event.

// The defaults of SyncTuning.
const (
	// syncReconcileEvery is how often an instance holding a system's
	// lease reconciles the system's coming appointments.
	syncReconcileEvery = time.Hour
	// syncReconcileWindow is how far ahead a reconciliation looks.
	syncReconcileWindow = 14 * 24 * time.Hour
	// syncDrain bounds the polls one tick makes while a backlog is left
	// (each takes ehr.SyncConfig.MaxBatches batches at most).
	syncDrain = 5
)

// SyncTuning tunes the pollers of EHR sync; zero fields take the defaults
// (tests shorten them).
type SyncTuning struct {
	// Interval, when set, replaces the sync.interval of every system
	// whose sync is on (the file cannot go under a second).
	Interval time.Duration
	// ReconcileEvery is how often the instance that polls a system lists
	// its next 14 days to catch deletions (0: an hour).
	ReconcileEvery time.Duration
	// Lease is how long a claim of a system's poller lasts (0: the
	// system's interval plus a minute, ehr.SyncLease): how long an
	// instance that died holding it keeps the others from taking over.
	Lease time.Duration
}

// syncTarget is one EHR system whose appointment changes are polled: its
// clients (its change feed among them), its interval and the businesses
// its changes belong to (see syncBusinesses).
type syncTarget struct {
	sys        *ehrSystem
	interval   time.Duration
	businesses []string
}

// same reports whether t polls as o does: the same clients (a reload
// kept the system), interval and businesses.
func (t syncTarget) same(o syncTarget) bool {
	return t.sys == o.sys && t.interval == o.interval && (t.businesses == nil) == (o.businesses == nil) &&
		slices.Equal(t.businesses, o.businesses)
}

// syncTargets are the systems of cfg with sync on (ehrconfig's
// SyncInterval: the integration EHRs by default) whose adapter has a
// change feed, by name.
func syncTargets(cfg *ehrconfig.Config, systems []*ehrSystem) map[string]syncTarget {
	out := map[string]syncTarget{}
	for _, sys := range systems {
		interval := cfg.SyncInterval(sys.cfg.Name)
		if interval <= 0 || sys.changes == nil {
			continue
		}
		out[sys.cfg.Name] = syncTarget{sys: sys, interval: interval, businesses: syncBusinesses(cfg, sys.cfg)}
	}
	return out
}

// syncBusinesses are the businesses the appointment changes of system s
// belong to (ehr.SyncConfig.Businesses): the integration.by_business keys
// that name it; for integration.ehr, also the businesses it lists that
// fall to it; for a system behind no business's appointments, the
// businesses it lists. nil (any business; an appointment no booking names
// belongs to none) for integration.ehr or such a system when it lists no
// business: it serves every one, as in a single-practice deployment.
func syncBusinesses(cfg *ehrconfig.Config, s ehrconfig.System) []string {
	var out []string
	for b, name := range cfg.Integration.ByBusiness {
		if name == s.Name {
			out = append(out, b)
		}
	}
	isDefault := cfg.Integration.EHR == s.Name
	if isDefault || len(out) == 0 {
		if len(s.Businesses) == 0 {
			return nil
		}
		for _, b := range s.Businesses {
			if name, ok := cfg.IntegrationFor(b); !isDefault || !ok || name == s.Name {
				out = append(out, b)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Sync is what the pollers of EHR sync run with.
type Sync struct {
	// Store keeps the cursors and leases, and tells the status of a
	// system another instance polls.
	Store  ehr.SyncStore
	Tx     ehr.Transactor // the batches of changes, with their events
	Tuning SyncTuning
}

// syncLoops runs the pollers of EHR sync of one instance.
type syncLoops struct {
	ehrs    *Systems
	deps    Sync
	owner   string // this instance, in the leases
	tuning  SyncTuning
	log     *slog.Logger
	metrics *syncMetrics
	board   *syncBoard
}

// newSyncLoops makes the pollers of the systems of e, their metrics on
// reg.
func newSyncLoops(e *Systems, deps Sync, log *slog.Logger, reg prometheus.Registerer) *syncLoops {
	tuning := deps.Tuning
	tuning.ReconcileEvery = cmp.Or(tuning.ReconcileEvery, syncReconcileEvery)
	board := newSyncBoard()
	return &syncLoops{ehrs: e, deps: deps, owner: core.NewUUID(), tuning: tuning,
		log: log.With("component", "sync"), metrics: newSyncMetrics(reg, board), board: board}
}

// Run keeps a poller per system with sync on until ctx is done, through
// reloads (see syncLoops.run).
func (e *Systems) Run(ctx context.Context) { e.sync.run(ctx) }

// SyncStates is where the poller of each system with sync on stands, by
// name, for /readyz.
func (e *Systems) SyncStates() []ehr.SyncState { return e.sync.board.states() }

// syncRun is one running poller.
type syncRun struct {
	target syncTarget
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends the poller and waits for it (a poll in flight is cancelled;
// its transaction, if any, rolls back).
func (r *syncRun) stop() {
	r.cancel()
	<-r.done
}

// run keeps one poller per sync target of the systems in force until ctx
// is done. At start and after each reload of the EHR systems file it
// stops the pollers of the systems removed, rebuilt (a changed
// configuration) or with another interval or businesses, waiting for
// each to end, then starts those missing: a system has at most one poller
// in this instance, always over the clients in force.
func (l *syncLoops) run(ctx context.Context) {
	running := map[string]*syncRun{}
	defer func() {
		for _, r := range running {
			r.stop()
		}
	}()
	for {
		l.settle(ctx, running, l.ehrs.cur.Load().syncs)
		select {
		case <-ctx.Done():
			return
		case <-l.ehrs.changed:
		}
	}
}

// settle makes running the pollers of targets.
func (l *syncLoops) settle(ctx context.Context, running map[string]*syncRun, targets map[string]syncTarget) {
	for name, r := range running {
		t, ok := targets[name]
		if ok && t.same(r.target) {
			continue
		}
		r.stop()
		delete(running, name)
		if !ok {
			l.metrics.forget(name)
			l.board.forget(name)
		}
	}
	for name, t := range targets {
		if _, ok := running[name]; ok {
			continue
		}
		rctx, cancel := context.WithCancel(ctx)
		r := &syncRun{target: t, cancel: cancel, done: make(chan struct{})}
		running[name] = r
		go func() {
			defer close(r.done)
			l.poll(rctx, name, t)
		}()
	}
}

// poll is the poller of one system: every interval it polls (and drains
// a backlog), and every ReconcileEvery, when it holds the lease, it
// reconciles the next 14 days. An EHR failure is logged with its code and
// tried again at the next tick; an EHR that cannot tell its changes is
// logged once and its poller ends (until a reload changes the system).
func (l *syncLoops) poll(ctx context.Context, name string, t syncTarget) {
	interval := cmp.Or(l.tuning.Interval, t.interval)
	s := ehr.NewSyncer(t.sys.changes, t.sys.scheduler, l.deps.Store, l.deps.Tx, ehr.SyncConfig{
		System: name, Owner: l.owner, Businesses: t.businesses, Interval: interval, Lease: l.tuning.Lease})
	log := l.log.With("ehr", name)
	m := l.metrics.system(name)
	l.board.start(name, time.Now())
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var reconciled time.Time
	for {
		goOn, held := l.pollOnce(ctx, s, name, log, m)
		if !goOn {
			l.board.stop(name)
			return
		}
		if held && time.Since(reconciled) >= l.tuning.ReconcileEvery && l.reconcile(ctx, s, log, m) {
			reconciled = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// pollOnce polls once, again at once while a backlog is left (at most
// syncDrain times), and notes the outcome. held tells that this instance
// polled; goOn is false when the EHR cannot tell its changes.
func (l *syncLoops) pollOnce(ctx context.Context, s *ehr.Syncer, name string, log *slog.Logger, m *systemSync) (goOn, held bool) {
	for range syncDrain {
		began := time.Now()
		res, err := s.PollOnce(ctx)
		if ctx.Err() != nil {
			return true, false // stopping
		}
		if res.Held {
			m.observe(res, time.Since(began))
			clockAnomalies(res, log)
		}
		if err != nil {
			return l.failed(name, err, log, m), false
		}
		if !res.Held {
			l.observe(ctx, name, log)
			return true, false
		}
		l.board.polled(name, time.Now(), res.Watermark)
		if n := eventCount(res); n > 0 {
			log.Info("appointment changes published", "events", n, "changes", res.Changes, "skipped", res.Skipped)
		}
		if !res.More {
			break
		}
	}
	return true, true
}

// clockAnomalies logs what a poll found past the EHR's clock (times and
// counts only: no appointment, no patient).
func clockAnomalies(res ehr.PollResult, log *slog.Logger) {
	if res.Ahead > 0 {
		log.Warn("appointment changes dated past the EHR's clock: published, but the sync watermark does not follow them",
			"changes", res.Ahead, "latest", res.AheadAt, "bound", res.Bound)
	}
	if !res.Rewound.IsZero() {
		log.Warn("the sync watermark lay past the EHR's clock: set back to it; changes made since it got there may need an operator to set it further back",
			"was", res.Rewound, "watermark", res.Watermark)
	}
}

// failed notes a failed poll; it returns false for an EHR that cannot
// tell its changes.
func (l *syncLoops) failed(name string, err error, log *slog.Logger, m *systemSync) bool {
	code := failureCode(err)
	if errors.Is(err, ehr.ErrSyncLeaseLost) {
		log.Debug("sync lease taken over by another instance")
		return true
	}
	l.board.failed(name, code)
	m.failed(code)
	if errors.Is(err, ehr.ErrChangesNotSupported) {
		log.Warn("the EHR cannot tell its appointment changes (no appointments.changes): its sync is off until the system's configuration changes",
			"code", code)
		return false
	}
	log.Warn("poll the EHR for appointment changes; trying again at the next tick", "code", code)
	return true
}

// observe takes in the cursor of a system another instance polls, so that
// this instance's lag and /readyz tell the truth too.
func (l *syncLoops) observe(ctx context.Context, name string, log *slog.Logger) {
	st, found, err := l.deps.Store.Status(ctx, name)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("read the sync status", "code", failureCode(err))
	case found:
		l.board.observe(name, st)
	}
}

// reconcile reconciles the next syncReconcileWindow; it reports whether
// it did (this instance held the lease and the EHR answered).
func (l *syncLoops) reconcile(ctx context.Context, s *ehr.Syncer, log *slog.Logger, m *systemSync) bool {
	now := time.Now()
	res, err := s.Reconcile(ctx, now, now.Add(syncReconcileWindow))
	m.reconciled(res)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("reconcile the EHR's coming appointments", "code", failureCode(err))
		}
		return false
	}
	if res.Cancelled > 0 || res.Truncated {
		log.Info("reconciled the EHR's coming appointments", "listed", res.Listed, "truncated", res.Truncated, "cancelled", res.Cancelled)
	}
	return res.Held
}

// eventCount is how many events a poll published.
func eventCount(res ehr.PollResult) int {
	n := 0
	for _, c := range res.Events {
		n += c
	}
	return n
}

// failureCode is the code of err that is logged and counted: a
// core.Error's code, else "internal" (an EHR's own words may hold patient
// data, and a label takes few values).
func failureCode(err error) string {
	var ce *core.Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	return "internal"
}
