package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/adapters/postgres"
)

// newAuditor is the audit trail the HTTP API records to: the PostgreSQL
// log, commits grouped, with its counts as metrics. The returned func
// flushes and stops it. (test/bench builds the service once with this file
// replaced by a no-op, to measure what the trail costs.)
func newAuditor(db *postgres.Store, reg *prometheus.Registry) (httpapi.Auditor, func(), error) {
	l, err := db.AuditLog(postgres.AuditConfig{})
	if err != nil {
		return nil, nil, err
	}
	counter := func(name, help string, v func(postgres.AuditStats) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v(l.Stats())) })
	}
	reg.MustRegister(
		counter("carebridge_audit_events_total", "Audit events committed.", func(s postgres.AuditStats) uint64 { return s.Events }),
		counter("carebridge_audit_commits_total", "Transactions that committed audit events (grouped).", func(s postgres.AuditStats) uint64 { return s.Batches }),
		counter("carebridge_audit_failed_events_total", "Audit events whose transaction failed (answered 503).", func(s postgres.AuditStats) uint64 { return s.Failed }),
	)
	return l, l.Close, nil
}
