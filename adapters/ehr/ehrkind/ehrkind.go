// Package ehrkind is what an adapter kind of the EHR systems file registers,
// the way a database/sql driver does: its rules in the file, whether its
// systems keep a link, and how one of its systems is built, the built value
// telling what it can do (Adapted). Each adapter package exports its Kind
// (fhir.Kind, wsbot.Kind); app lists them once and ehrsystems builds the
// systems through them, so no caller compares a kind's name or type-asserts
// for a feature.
package ehrkind

import (
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/core/ehr"
)

// Kind is one adapter kind.
type Kind struct {
	// Rules are the kind's rules in the EHR systems file; Rules.Name is
	// the adapter its systems name.
	Rules ehrconfig.AdapterRules
	// Link tells that its systems keep a link open: their metrics have
	// the link's series (up, reconnects) from the start.
	Link bool
	// New builds one system of the kind.
	New func(Deps, ehrconfig.System) (Adapted, error)
}

// Adapted is one system built, by what it can do; what it cannot is nil.
type Adapted struct {
	Patients  ehr.PatientSearcher // its patient search
	Records   ehr.RecordSearcher  // its clinical records
	Scheduler ehr.Scheduler       // its appointments and agents
	// Changes tells the appointment changes made in the EHR itself: the
	// systems with sync on are polled through it.
	Changes ehr.ChangeFeed
	// Link is closed when the system leaves (after a grace) or the
	// systems close.
	Link io.Closer
}

// Metrics are one system's series: those of its HTTP client
// (ehrhttp.Metrics) and of its link (wsbot.Metrics).
type Metrics interface {
	ehrhttp.Metrics
	// LinkUp records whether the link is open.
	LinkUp(up bool)
	// Reconnect records a link opened after the first.
	Reconnect()
}

// Deps is what a kind builds a system with.
type Deps struct {
	Log     *slog.Logger         // the service's; a kind adds its component and the ehr
	Metrics Metrics              // the system's series
	Tracer  trace.TracerProvider // nil: no spans of its calls
}

// HTTPClient is the HTTP client of system s: it carries the system's
// credentials, retries, rate limit and breaker (a bot uses it for its
// handshake headers).
func (d Deps) HTTPClient(s ehrconfig.System) (*ehrhttp.Client, error) {
	authType := string(s.Auth.Type)
	if s.Auth.Type == ehrconfig.AuthNone {
		authType = ehrhttp.AuthNone
	}
	return ehrhttp.New(ehrhttp.Config{
		Name:    s.Name,
		BaseURL: s.BaseURL,
		Auth: ehrhttp.AuthConfig{
			Type: authType, TokenURL: s.Auth.TokenURL, ClientID: s.Auth.ClientID,
			ClientSecret: s.Auth.ClientSecret.Value(), Scopes: s.Auth.Scopes,
			PrivateKey: s.Auth.PrivateKey.Value(), KeyID: s.Auth.KeyID, Algorithm: s.Auth.Algorithm,
			APIKey: s.Auth.APIKey.Value(), APIKeyHeader: s.Auth.APIKeyHeader,
			Username: s.Auth.Username, Password: s.Auth.Password.Value(),
		},
		RequestsPerMinute: s.RateLimit.RequestsPerMinute,
		Timeout:           s.Timeout,
		RetryAttempts:     s.RetryAttempts,
		Logger:            d.Log.With("component", "ehrhttp", "ehr", s.Name),
		Metrics:           d.Metrics,
		Tracer:            d.Tracer,
		PropagateTrace:    s.PropagateTrace,
	})
}
