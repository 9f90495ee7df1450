package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/adapters/ehr/ehrsystems"
	"github.com/carebridge/carebridge/core/ehr"
)

// buildEHR puts the EHR systems of cfg in force, with the pollers of EHR
// sync, and builds the scheduling and person-links use cases over them; it
// returns the search use case, which reads the person links.
func (a *App) buildEHR(ctx context.Context, cfg Config, keys Keys, cache ehr.Cache, registry *prometheus.Registry) (*ehr.Service, error) {
	var err error
	a.ehrs, err = ehrsystems.New(ctx, cfg.EHR, ehrsystems.Config{
		Kinds: ehrkinds.All(), Log: a.log, Registry: registry, Tracer: cfg.Tracing.Provider, Sync: a.syncDeps(cfg.Sync)})
	if err != nil {
		return nil, err
	}
	a.pinEHRSystems(ctx)
	a.links = a.db.Links()
	a.personLinks = ehr.NewLinks(a.ehrs, a.links)
	search := ehr.NewService(a.ehrs, cache, ehr.Config{CacheTTL: cfg.SearchCacheTTL, RateLimit: cfg.SearchRateLimit, Links: a.links, KeyKey: keys.searchKeyKey()})
	a.scheduling = ehr.NewScheduling(a.ehrs, a.db.Holds(), a.db.Idempotency(), a.db.Bookings(), cache, a.db.EHRTx(),
		ehr.SchedulingConfig{FingerprintKeys: keys.fingerprintKeys(), KeyKey: keys.searchKeyKey(), RateLimit: cfg.SearchRateLimit, SettleAfter: cfg.ReconcileSettle})
	a.reconcileEvery = cfg.ReconcileEvery
	return search, nil
}

// syncDeps are the stores of EHR sync in PostgreSQL.
func (a *App) syncDeps(tuning ehrsystems.SyncTuning) ehrsystems.Sync {
	return ehrsystems.Sync{Store: a.db.Sync(), Tx: a.db.EHRTx(), Tuning: tuning}
}

// ReloadEHR puts the EHR systems of cfg (nil: none) in force, as SIGHUP
// does: requests in flight finish on the systems they started with and the
// next ones use the new; a system whose configuration (secrets included) is
// unchanged keeps its clients, with their breaker, token cache, rate limiter
// and link. When a system cannot be built it returns why and the systems in
// force stay. Before, the bookings that do not record their EHR system yet
// are pinned to it under the systems in force (pinEHRSystems).
func (a *App) ReloadEHR(cfg *ehrconfig.Config) error {
	a.pinEHRSystems(context.Background())
	return a.ehrs.Reload(cfg)
}
