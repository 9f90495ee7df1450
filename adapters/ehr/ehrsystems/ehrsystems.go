// Package ehrsystems is the EHR systems at run time: it builds each system
// of the EHR systems file through the adapter kind it names (Kinds), puts
// them in force (ehr.Systems: the search's systems and the integration EHR
// of each business), swaps them on a reload while keeping those whose
// configuration did not change, closes the links of the others after a
// grace, and runs the pollers of the systems with sync on (Run). Its
// metrics and its log lines are those of the systems.
package ehrsystems

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/core/ehr"
)

// linkGrace is how long the WebSocket link of a system a reload removed
// (or changed) stays open for the requests that started before: longer
// than a booking's EHR calls (90 s) and a search of any sane timeout and
// retry_attempts. A call still running then fails as the link closes.
const linkGrace = 5 * time.Minute

// Config is what the systems are built and run with.
type Config struct {
	Kinds    Kinds                 // the adapter kinds a system may name
	Log      *slog.Logger          // the service's
	Registry prometheus.Registerer // the systems' and sync's metrics
	Tracer   trace.TracerProvider  // nil: no spans of EHR calls
	Sync     Sync                  // the pollers of EHR sync
}

// Systems is the EHR systems in force (ehr.Systems): each call answers from
// the set of the last reading of the file, and a reload swaps the set, so a
// request that asked before keeps the systems it got.
type Systems struct {
	log     *slog.Logger
	kinds   Kinds
	metrics *ehrMetrics
	tracer  trace.TracerProvider // nil: no spans of EHR calls
	grace   time.Duration        // linkGrace; tests shorten it
	cur     atomic.Pointer[ehrSet]
	// changed is signalled (never blocking) after each reload that put
	// new systems in force; the sync loops' supervisor waits on it.
	changed chan struct{}
	sync    *syncLoops

	mu       sync.Mutex // one reload at a time; guards retiring and closed
	retiring map[*time.Timer][]io.Closer
	closed   bool
}

var _ ehr.Systems = (*Systems)(nil)

// New builds every system of file (nil: none) and writes one INFO line per
// system (see logSystems). Run polls those with sync on.
func New(ctx context.Context, file *ehrconfig.Config, cfg Config) (*Systems, error) {
	e, err := newSystems(file, cfg.Kinds, cfg.Log, newEHRMetrics(cfg.Registry), cfg.Tracer)
	if err != nil {
		return nil, err
	}
	e.sync = newSyncLoops(e, cfg.Sync, cfg.Log, cfg.Registry)
	logSystems(ctx, cfg.Log, file)
	return e, nil
}

// newSystems builds every system of file (nil: none); tracer (nil: none)
// makes the spans of their calls.
func newSystems(file *ehrconfig.Config, kinds Kinds, log *slog.Logger, metrics *ehrMetrics, tracer trace.TracerProvider) (*Systems, error) {
	e := &Systems{log: log, kinds: kinds, metrics: metrics, tracer: tracer, grace: linkGrace,
		retiring: map[*time.Timer][]io.Closer{}, changed: make(chan struct{}, 1)}
	set, _, err := e.build(file, &ehrSet{})
	if err != nil {
		return nil, err
	}
	e.cur.Store(set)
	return e, nil
}

// Search returns the systems the search asks for business: those serving
// it.
func (e *Systems) Search(business string) []ehr.System {
	set := e.cur.Load()
	if s, ok := set.bySearch[business]; ok {
		return s
	}
	return set.search
}

// Integration returns the name and Scheduler of the integration EHR of
// business (nil: none).
func (e *Systems) Integration(business string) (string, ehr.Scheduler) {
	set := e.cur.Load()
	in, ok := set.byIntegration[business]
	if !ok {
		in = set.integration
	}
	return in.name, in.sch
}

// SchedulerOf returns the Scheduler of the system called name, whichever
// businesses it serves (nil: no such system in force).
func (e *Systems) SchedulerOf(name string) ehr.Scheduler {
	if sys, ok := e.cur.Load().byName(name); ok {
		return sys.scheduler
	}
	return nil
}

// MultiPractice reports whether some system of the file has businesses.
func (e *Systems) MultiPractice() bool { return e.cur.Load().multi }

// Reload swaps in the systems of file (nil: none). A system whose
// configuration is unchanged, secrets included, is kept as it is; the links
// of the others are closed after linkGrace. When a system cannot be built
// nothing changes.
func (e *Systems) Reload(file *ehrconfig.Config) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("EHR systems: closed")
	}
	old := e.cur.Load()
	set, kept, err := e.build(file, old)
	if err != nil {
		return err
	}
	e.cur.Store(set)
	select {
	case e.changed <- struct{}{}:
	default: // a signal is pending already
	}
	var links []io.Closer
	for _, s := range old.systems {
		if kept[s] {
			continue
		}
		if s.link != nil {
			links = append(links, s.link)
		}
		if _, still := set.byName(s.cfg.Name); !still {
			e.metrics.forget(s.cfg.Name)
		}
	}
	e.retire(links)
	return nil
}

// retire closes links once the grace is over (or at Close). e.mu is held.
func (e *Systems) retire(links []io.Closer) {
	if len(links) == 0 {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(e.grace, func() {
		e.mu.Lock()
		links, ok := e.retiring[t]
		delete(e.retiring, t)
		e.mu.Unlock()
		if ok {
			closeAll(e.log, links)
		}
	})
	e.retiring[t] = links
}

// Close closes every link, those of removed systems included.
func (e *Systems) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for t, links := range e.retiring {
		t.Stop()
		closeAll(e.log, links)
	}
	clear(e.retiring)
	closeAll(e.log, e.cur.Load().links())
	return nil
}

// closeAll closes cs in reverse order and logs the failures.
func closeAll(log *slog.Logger, cs []io.Closer) {
	for i := len(cs) - 1; i >= 0; i-- {
		if err := cs[i].Close(); err != nil {
			log.Warn("close EHR link", "error", err)
		}
	}
}
