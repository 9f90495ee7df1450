// This file is not part of the service. test/bench builds cmd/carebridge a
// second time with `go build -overlay` replacing app/audit.go by it, so one
// bench run measures the API with the audit trail and with its writer
// replaced by a no-op.

package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/audit"
)

// auditor is a no-op audit trail with the methods App uses.
type auditor struct{}

func newAuditor(*postgres.Store, *prometheus.Registry, *slog.Logger, trace.TracerProvider) (*auditor, error) {
	return &auditor{}, nil
}

func (*auditor) Record(context.Context, audit.Event) error { return nil }
func (*auditor) Ready(context.Context) error               { return nil }
func (*auditor) Unauthenticated(string, audit.Event)       {}
func (*auditor) runWriter()                                {}
func (*auditor) runTally(context.Context)                  {}
func (*auditor) close()                                    {}
