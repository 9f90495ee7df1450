// This file is not part of the service. test/bench builds cmd/carebridge a
// second time with `go build -overlay` replacing app/audit.go by it, so one
// bench run measures the API with the audit trail and with its writer
// replaced by a no-op.

package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
)

type noAudit struct{}

func (noAudit) Record(context.Context, audit.Event) error { return nil }
func (noAudit) Ready(context.Context) error               { return nil }
func (noAudit) Unauthenticated(string, audit.Event)       {}

func newAuditor(*postgres.Store, *prometheus.Registry, *slog.Logger) (httpapi.Auditor, func(), error) {
	return noAudit{}, func() {}, nil
}
