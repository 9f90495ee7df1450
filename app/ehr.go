package app

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
)

// ehrs is every EHR system of the EHR systems file, adapted: each one's
// patient search, and the Scheduler of the one integration.ehr names.
type ehrs struct {
	systems   []ehr.System
	scheduler ehr.Scheduler // nil when integration.ehr is unset
	closers   []io.Closer
}

// newEHRs adapts every system of cfg; when one fails, it closes the links
// it opened for the ones before.
func newEHRs(cfg *ehrconfig.Config, log *slog.Logger, metrics *ehrMetrics) (_ *ehrs, err error) {
	out := &ehrs{}
	if cfg == nil {
		return out, nil
	}
	defer func() {
		if err != nil {
			closeAll(log, out.closers)
		}
	}()
	for _, s := range cfg.Systems {
		sm := metrics.system(s.Name, s.Adapter == ehrconfig.AdapterWSBot)
		// The HTTP client carries the system's credentials, retries, rate
		// limit and breaker; the bot uses it for its handshake headers.
		authType := string(s.Auth.Type)
		if s.Auth.Type == ehrconfig.AuthNone {
			authType = ehrhttp.AuthNone
		}
		client, err := ehrhttp.New(ehrhttp.Config{
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
			Logger:            log.With("component", "ehrhttp", "ehr", s.Name),
			Metrics:           sm,
		})
		if err != nil {
			return nil, fmt.Errorf("EHR_CONFIG: system %s: %w", s.Name, err)
		}
		integration := s.Name == cfg.Integration.EHR
		var (
			patients  ehr.PatientSearcher
			scheduler ehr.Scheduler
		)
		switch s.Adapter {
		case ehrconfig.AdapterFHIR:
			patients = fhir.New(client, s.SearchEndpoint)
			if integration {
				scheduler = fhir.NewScheduler(client, fhir.WithLogger(log.With("component", "fhir", "ehr", s.Name)))
			}
		case ehrconfig.AdapterWSBot:
			bot, err := wsbot.New(wsbot.Config{
				Name: s.Name, URL: s.BaseURL, SearchAction: s.SearchEndpoint, CallTimeout: s.Timeout,
				Header: client.AuthHeader, Logger: log.With("component", "wsbot", "ehr", s.Name),
				Metrics: sm,
			})
			if err != nil {
				return nil, fmt.Errorf("EHR_CONFIG: system %s: %w", s.Name, err)
			}
			out.closers = append(out.closers, bot)
			patients, scheduler = bot, bot
		default:
			return nil, fmt.Errorf("EHR_CONFIG: system %s: unknown adapter %q", s.Name, s.Adapter)
		}
		types := make([]string, len(s.SearchTypes))
		for i, t := range s.SearchTypes {
			types[i] = string(t)
		}
		out.systems = append(out.systems, ehr.System{Name: s.Name, SearchTypes: types, Sites: s.Sites, Patients: patients})
		if integration {
			out.scheduler = scheduler
		}
	}
	return out, nil
}
