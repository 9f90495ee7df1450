package ehrsystems

import (
	"context"
	"log/slog"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
)

// logSystems writes one INFO line per EHR system of cfg, so an operator
// sees what the EHR systems file gave: the name, adapter, search types,
// sites, authentication type, limits and whether it is the integration
// EHR. Never the base URL, a token URL, a client id, a user name or a
// secret.
func logSystems(ctx context.Context, log *slog.Logger, cfg *ehrconfig.Config) {
	if cfg == nil {
		log.LogAttrs(ctx, slog.LevelInfo, "no EHR system configured")
		return
	}
	for _, s := range cfg.Systems {
		types := make([]string, len(s.SearchTypes))
		for i, t := range s.SearchTypes {
			types[i] = string(t)
		}
		auth := string(s.Auth.Type)
		if auth == "" {
			auth = "none"
		}
		log.LogAttrs(ctx, slog.LevelInfo, "EHR system loaded",
			slog.String("ehr", s.Name),
			slog.String("adapter", string(s.Adapter)),
			slog.Any("search_types", types),
			slog.Any("sites", s.Sites),
			slog.String("auth_type", auth),
			slog.Bool("integration", s.Name == cfg.Integration.EHR),
			slog.Int("requests_per_minute", s.RateLimit.RequestsPerMinute),
			slog.Float64("timeout_ms", float64(s.Timeout.Microseconds())/1000),
			slog.Int("retry_attempts", s.RetryAttempts))
	}
}
