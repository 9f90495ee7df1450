// Package app is the composition root: it builds every adapter from Config,
// wires them into the cores and the HTTP server, and runs it. It is the only
// package that knows every other.
package app

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/carebridge/carebridge/adapters/auth"
	"github.com/carebridge/carebridge/adapters/clamd"
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrsystems"
	"github.com/carebridge/carebridge/adapters/fsblob"
	"github.com/carebridge/carebridge/adapters/httpapi"
	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/adapters/memory"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/redis"
	"github.com/carebridge/carebridge/adapters/s3"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/core/storage"
)

// Config is the whole configuration of the service; cmd builds it from the
// environment.
type Config struct {
	HTTPAddr    string
	DatabaseURL string
	Objects     ObjectStore // where blobs are kept
	// BlobKeys wrap the data keys of encrypted blobs (nil: none, encrypted
	// uploads fail with 400).
	BlobKeys           *keyring.Ring
	MaxUploadBytes     int64
	OIDCIssuerURL      string
	OIDCAudience       string
	DevKey             *ecdsa.PrivateKey // set: AUTH_DEV_MODE, tokens signed by this key
	CORSAllowedOrigins []string
	// StallTimeout cuts off a body that moves no byte for this long (0: 30 s).
	StallTimeout time.Duration
	// ReconcileEvery is how often bookings whose EHR answer was lost are
	// settled (0: 30 s), and ReconcileSettle how long after such a loss
	// (0: 30 s). Tests shorten them.
	ReconcileEvery, ReconcileSettle time.Duration
	// ReadAheadBytes bounds the read-ahead buffers of all encrypted
	// downloads together (0: storage.DefaultReadAheadBytes).
	ReadAheadBytes int64

	EHR             *ehrconfig.Config // nil: no EHR configured (search answers 503)
	RedisURL        string            // "": in-process cache and counters
	SearchCacheTTL  time.Duration
	SearchRateLimit int // searches per minute per caller (0: unlimited)

	// ServiceKeys (SERVICE_KEYS) key the service's own secrets: webhook
	// secrets at rest, Idempotency-Key fingerprints, the Redis cache. The
	// first seals, the others still open. Empty: the key generated at
	// first start and kept in PostgreSQL, shared by every instance (the
	// admin CLI uses the same keys, see LoadKeys).
	ServiceKeys []keyring.Named
	// LegacyKeys are the key material earlier versions derived those keys
	// from (EHR_CREDENTIALS_KEY, CLOUD_STORAGE_ENCRYPTION_KEY): they only
	// open, so what was sealed before an upgrade keeps working.
	LegacyKeys []keyring.Named
	// EventsNATSURL, when set, is the NATS server events are also
	// published to (JetStream).
	EventsNATSURL string
	// Events tunes webhook delivery; zero fields take the contract's
	// defaults (tests shorten them).
	Events event.Config
	// WebhookAllowPrivate (WEBHOOK_ALLOW_PRIVATE) lets the webhooks a
	// practice makes target loopback and private addresses, and http.
	WebhookAllowPrivate bool
	// WebhookResolver resolves receivers' host names for the forgery
	// checks, at creation and on every connection (nil: the system's
	// resolver; tests inject one).
	WebhookResolver event.Resolver
	// Sync tunes the pollers of EHR sync (the systems with sync on in the
	// EHR systems file); zero fields take the defaults.
	Sync ehrsystems.SyncTuning
	// Scanner is the ClamAV daemon every upload is scanned by
	// (CLAMD_ADDRESS); nil: uploads are not scanned.
	Scanner *clamd.Config
	// ReadyTTL is how long one probe of the dependencies answers /readyz
	// (0: httpapi.DefaultReadyTTL).
	ReadyTTL time.Duration
	// Tracing says where spans go (OTEL_* variables, see TracingFromEnv);
	// the zero value makes none.
	Tracing Tracing
}

// ObjectStore says where blobs are kept: in S3 when set, an S3-compatible
// store, else in the directory Dir of the local filesystem.
type ObjectStore struct {
	Dir string
	S3  *s3.Config
}

// App is the running service.
type App struct {
	log     *slog.Logger
	db      *postgres.Store
	objects storage.ObjectStore
	redis   *redis.Cache // nil without REDIS_URL
	// ehrs are the EHR systems in force (ReloadEHR swaps them) and the
	// pollers of EHR sync.
	ehrs           *ehrsystems.Systems
	server         *http.Server
	listener       net.Listener
	jobs           *jobMetrics // what the jobs of loops did
	reconcileEvery time.Duration
	scheduling     *ehr.Scheduling
	// links keeps the person links; its listener (a loop) keeps its memo
	// true across instances.
	links       *postgres.Links
	personLinks *ehr.Links
	blobs       *storage.Service
	audit       *auditor
	events      *events
	tracing     *tracing // Close flushes it
	// scanner tells /readyz how the malware scanner is.
	scanner scanner
}

// New migrates the database, connects every adapter, and listens on
// cfg.HTTPAddr (":0" picks a free port; see Addr).
func New(ctx context.Context, cfg Config, log *slog.Logger) (*App, error) {
	if err := postgres.Migrate(cfg.DatabaseURL); err != nil {
		return nil, err
	}
	db, err := postgres.New(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	a := &App{log: log, db: db}
	if err := a.build(ctx, cfg); err != nil {
		a.Close() // what build made before it failed
		return nil, err
	}
	return a, nil
}

// build makes, in order, what New connects to the database: the object
// store, the token verifier, the service keys and the cache, the EHR
// systems (with EHR sync) and search and scheduling over them, the metrics
// of the jobs, the audit trail, the events, the blob service, and the HTTP
// server.
func (a *App) build(ctx context.Context, cfg Config) error {
	if err := a.buildTracing(ctx, &cfg); err != nil {
		return err
	}
	if err := a.buildObjectStore(ctx, cfg.Objects); err != nil {
		return err
	}
	verifier, err := newVerifier(ctx, cfg)
	if err != nil {
		return err
	}
	serviceKeys, err := LoadKeys(ctx, a.db, cfg.ServiceKeys, cfg.LegacyKeys)
	if err != nil {
		return err
	}
	cache, err := a.newCache(ctx, cfg.RedisURL, serviceKeys.cacheKey())
	if err != nil {
		return err
	}
	registry := prometheus.NewRegistry()
	search, err := a.buildEHR(ctx, cfg, serviceKeys, cache, registry)
	if err != nil {
		return err
	}
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	a.jobs = newJobMetrics(registry)
	a.audit, err = newAuditor(a.db, registry, a.log.With("component", "audit"), cfg.Tracing.Provider)
	if err != nil {
		return err
	}
	a.events, err = newEvents(ctx, cfg, serviceKeys, a.db, a.log.With("component", "events"), registry)
	if err != nil {
		return err
	}
	if err := a.buildBlobs(cfg, registry); err != nil {
		return err
	}
	return a.listen(cfg, a.newHandler(cfg, verifier, search, registry))
}

// buildObjectStore connects the object store and makes sure every
// container exists.
func (a *App) buildObjectStore(ctx context.Context, cfg ObjectStore) error {
	objects, err := newObjectStore(ctx, cfg)
	if err != nil {
		return err
	}
	a.objects = objects
	for _, c := range storage.Containers {
		if err := objects.EnsureContainer(ctx, c); err != nil {
			return fmt.Errorf("blob store: %w", err)
		}
	}
	return nil
}

// buildBlobs builds the storage core over the object store, with the
// malware scanner when one is set.
func (a *App) buildBlobs(cfg Config, registry *prometheus.Registry) error {
	keys := cfg.BlobKeys
	if keys == nil {
		keys = &keyring.Ring{} // no key: wrapping fails with ErrEncryptionKeyMissing
	}
	var err error
	a.scanner, err = buildScanner(cfg.Scanner, registry, a.log.With("component", "scanner"))
	if err != nil {
		return fmt.Errorf("CLAMD_ADDRESS: %w", err)
	}
	a.blobs = storage.NewService(a.db.Blobs(), a.db.StorageTx(), a.objects, keys, a.db, cfg.MaxUploadBytes,
		append(a.scanner.options, storage.WithReadAhead(newReadAheadPool(cfg.ReadAheadBytes, registry)))...)
	return nil
}

// newHandler is the HTTP API over the cores that build made.
func (a *App) newHandler(cfg Config, verifier *auth.Verifier, search *ehr.Service, registry *prometheus.Registry) http.Handler {
	return httpapi.New(httpapi.Config{
		Log:                a.log.With("component", "http"),
		Auth:               verifier,
		Storage:            a.blobs,
		Business:           NewBusiness(a.db, a.blobs),
		Search:             countCacheHits(search, newSearchCacheMetrics(registry)),
		Scheduling:         a.scheduling,
		Links:              a.personLinks,
		Webhooks:           a.events.manager,
		Tenancy:            ehr.NewTenancy(a.ehrs, newMemberships(a.db.Members())),
		Registry:           registry,
		Tracer:             cfg.Tracing.Provider,
		Audit:              a.audit,
		Ready:              a.ready,
		Sync:               a.ehrs.SyncStates,
		Scanner:            a.scanner.state,
		ScannerLoad:        a.scanner.load,
		ReadyTTL:           cfg.ReadyTTL,
		MaxUploadBytes:     cfg.MaxUploadBytes,
		CORSAllowedOrigins: cfg.CORSAllowedOrigins,
		StallTimeout:       cfg.StallTimeout,
	})
}

// ready checks the database, the object store and, when set, Redis.
func (a *App) ready(ctx context.Context) error {
	err := errors.Join(a.db.Ping(ctx), a.objects.Ping(ctx))
	if a.redis != nil {
		err = errors.Join(err, a.redis.Ping(ctx))
	}
	return err
}

// listen opens cfg.HTTPAddr and makes the server of handler.
func (a *App) listen(cfg Config, handler http.Handler) error {
	var err error
	a.listener, err = net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("HTTP_ADDR: %w", err)
	}
	a.server = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelWarn),
	}
	return nil
}

func newObjectStore(ctx context.Context, cfg ObjectStore) (storage.ObjectStore, error) {
	if cfg.S3 != nil {
		return s3.New(ctx, *cfg.S3)
	}
	return fsblob.New(cfg.Dir)
}

// newCache is Redis when REDIS_URL is set (shared by several instances),
// its values sealed under key, else an in-process LRU.
func (a *App) newCache(ctx context.Context, url string, key []byte) (ehr.Cache, error) {
	if url == "" {
		return memory.New(memoryCacheEntries, memoryCacheBytes), nil
	}
	c, err := redis.New(ctx, url, key)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	a.redis = c
	return c, nil
}

// memoryCacheEntries and memoryCacheBytes bound the in-process search
// cache.
const (
	memoryCacheEntries = 10000
	memoryCacheBytes   = 256 << 20
)

func newVerifier(ctx context.Context, cfg Config) (*auth.Verifier, error) {
	if cfg.DevKey != nil {
		return auth.NewDev(cfg.DevKey, cfg.OIDCAudience)
	}
	v, err := auth.NewOIDC(ctx, cfg.OIDCIssuerURL, cfg.OIDCAudience)
	if err != nil {
		return nil, fmt.Errorf("OIDC_ISSUER_URL: %w", err)
	}
	return v, nil
}

// NewBusiness wires the business core to its PostgreSQL repositories and,
// for logos, to the storage core.
func NewBusiness(db *postgres.Store, blobs *storage.Service) *business.Service {
	return business.NewService(db.Businesses(), db.Members(), db.Locations(), db.Providers(), db.Hours(), logos{storage: blobs}, db.BusinessTx())
}

// NewBusinessWithoutLogos is the business core of the admin CLI, which has
// no object store: a logo is refused with ErrNoLogoStore.
func NewBusinessWithoutLogos(db *postgres.Store) *business.Service {
	return business.NewService(db.Businesses(), db.Members(), db.Locations(), db.Providers(), db.Hours(), noLogos{}, db.BusinessTx())
}

// Addr is the address the server listens on.
func (a *App) Addr() string { return a.listener.Addr().String() }

// Run serves until ctx is done, with the audit writer and every loop of
// the service (see loops) beside it, then shuts down in order: the server
// stops accepting and lets the requests in flight finish (at most 30 s),
// then the loops stop, and the audit writer, last, flushes the trail of
// the last requests.
func (a *App) Run(ctx context.Context) error {
	go a.audit.runWriter() // until a.audit.close
	loopCtx, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var loops sync.WaitGroup
	for _, run := range a.loops() {
		loops.Go(func() { run(loopCtx) })
	}
	err := a.serve(ctx)
	stopLoops()
	loops.Wait() // the dispatcher has recorded the deliveries that finished
	a.audit.close()
	return err
}

// serve serves until ctx is done, then shuts the server down gracefully.
func (a *App) serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- a.server.Serve(a.listener) }()
	a.log.Info("listening", "addr", a.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := a.server.Shutdown(shutdown)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	return err
}

// Close releases what New built, in the reverse order of building: the
// listener (already closed when Run served), the audit writer (Run has
// flushed and stopped it already; without Run it was never started),
// the events' NATS connection and pool, the EHR links, Redis, the object
// store and the database pool.
// New calls it when a step fails, for the steps before it. A failure to
// close is logged: nothing is left to retry it.
func (a *App) Close() {
	if a.listener != nil {
		if err := a.listener.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			a.log.Warn("close listener", "addr", a.listener.Addr().String(), "error", err)
		}
	}
	if a.audit != nil {
		a.audit.close()
	}
	if a.events != nil {
		a.events.close()
	}
	if a.ehrs != nil {
		a.ehrs.Close()
	}
	if a.redis != nil {
		if err := a.redis.Close(); err != nil {
			a.log.Warn("close redis", "error", err)
		}
	}
	if c, ok := a.objects.(io.Closer); ok {
		if err := c.Close(); err != nil {
			a.log.Warn("close object store", "error", err)
		}
	}
	a.db.Close()
	a.tracing.close(a.log) // last: the spans of everything above
}
