package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
)

const (
	// unauthenticatedGroups bounds the memory of the 401 tally: the client
	// addresses (by action and minute) it tracks at once; more go to an
	// overflow group per action.
	unauthenticatedGroups = 10000
	// tallyInterval is how often the groups of a minute that is over are
	// recorded.
	tallyInterval = 5 * time.Second
	// tallyWriters is how many groups are recorded at once (the log
	// commits them together).
	tallyWriters = 64
)

// newAuditor is the audit trail the HTTP API records to: the PostgreSQL
// log, commits grouped (a span per commit with tracer), with its counts as metrics, and the tally of
// requests refused with 401, recorded once their minute is over. It starts
// nothing: App.Run starts its writer (runWriter) first and its tally's
// loop (runTally) with the other loops, and stops the writer last (close).
// (test/bench builds the service once with this file replaced by a no-op,
// to measure what the trail costs.)
func newAuditor(db *postgres.Store, reg *prometheus.Registry, log *slog.Logger, tracer trace.TracerProvider) (*auditor, error) {
	l, err := db.AuditLog(postgres.AuditConfig{Tracer: tracer})
	if err != nil {
		return nil, err
	}
	counter := func(name, help string, v func(postgres.AuditStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(l.Stats())) })
	}
	a := &auditor{
		AuditLog: l,
		tally:    audit.NewTally(unauthenticatedGroups),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_audit_unauthenticated_total",
			Help: "Requests to audited endpoints refused with 401, counted in the trail's aggregated events."}),
		log: log,
	}
	reg.MustRegister(
		counter("carebridge_audit_events_total", "Audit events committed.", func(s postgres.AuditStats) uint64 { return s.Events }),
		counter("carebridge_audit_commits_total", "Transactions that committed audit events (grouped).", func(s postgres.AuditStats) uint64 { return s.Batches }),
		counter("carebridge_audit_failed_events_total", "Audit events whose transaction failed (answered 503).", func(s postgres.AuditStats) uint64 { return s.Failed }),
		a.refused,
	)
	return a, nil
}

// auditor is the PostgreSQL log with the tally of 401s beside it.
type auditor struct {
	*postgres.AuditLog
	tally     *audit.Tally
	refused   prometheus.Counter
	log       *slog.Logger
	closeOnce sync.Once
}

// Unauthenticated counts a refusal; it does not wait.
func (a *auditor) Unauthenticated(addr string, e audit.Event) {
	a.tally.Add(addr, e)
	a.refused.Inc()
}

// runWriter is the log's writer: Record waits for it. It returns once
// close has flushed the log.
func (a *auditor) runWriter() { a.AuditLog.Run() }

// runTally records, every tallyInterval until ctx is done, the groups
// whose minute is over.
func (a *auditor) runTally(ctx context.Context) {
	t := time.NewTicker(tallyInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if failed := a.record(a.tally.Take(now)); len(failed) > 0 {
				a.log.Error("audit events of refused requests not recorded; kept for the next round", "groups", len(failed))
				a.tally.Return(failed)
			}
		}
	}
}

// record writes groups, tallyWriters at a time, and returns those that
// failed.
func (a *auditor) record(groups []audit.Group) (failed []audit.Group) {
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, tallyWriters)
	)
	for _, g := range groups {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := a.Record(context.Background(), g.Event()); err != nil {
				mu.Lock()
				failed = append(failed, g)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return failed
}

// close records every group the tally holds, then flushes and stops the
// log; runTally has returned. Calls after the first do nothing.
func (a *auditor) close() { a.closeOnce.Do(a.shutdown) }

func (a *auditor) shutdown() {
	if failed := a.record(a.tally.Take(time.Time{})); len(failed) > 0 {
		n := 0
		for _, g := range failed {
			n += g.Count()
		}
		a.log.Error("audit events of refused requests lost at shutdown", "groups", len(failed), "requests", n)
	}
	a.AuditLog.Close()
}
