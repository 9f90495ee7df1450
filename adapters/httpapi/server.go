//go:generate go tool moq -rm -pkg httpapi -out ports_moq_test.go ../../ports Storage Business Search Scheduling Links Webhooks

// Package httpapi is the driving HTTP adapter: the gorilla/mux router, its
// middleware and handlers. It calls the use cases through package ports and
// writes every error through one function (errors.go).
package httpapi

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/ports"
)

// Authenticator verifies a bearer token and returns the caller.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (core.Actor, error)
}

// Config is what the server needs; app fills it.
type Config struct {
	Log        *slog.Logger
	Auth       Authenticator
	Storage    ports.Storage
	Business   ports.Business
	Search     ports.Search
	Scheduling ports.Scheduling
	// Links is the person links of /api/v1/person-links.
	Links ports.Links
	// Webhooks is the webhooks a practice manages, /api/v1/webhooks.
	Webhooks ports.Webhooks
	// Tenancy resolves the acting business of search, appointment, agent,
	// person-link and webhook requests; nil takes the header's (unit
	// tests only).
	Tenancy  ports.Tenancy
	Registry *prometheus.Registry
	// Audit keeps the audit trail of the blob, search and appointment
	// endpoints; nil audits nothing (unit tests only).
	Audit Auditor
	// Ready reports whether the dependencies (database, blob store) answer.
	Ready func(ctx context.Context) error
	// Sync tells where the poller of each EHR system with sync on stands,
	// shown by /readyz (nil: none).
	Sync func() []ehr.SyncState
	// Scanner checks the malware scanner for /readyz (nil: uploads are
	// not scanned), and ScannerLoad tells how busy its connections are.
	Scanner     func(ctx context.Context) ScannerState
	ScannerLoad func() ScannerLoad
	// ReadyTTL is how long one probe of Ready and Scanner answers /readyz
	// (0: DefaultReadyTTL).
	ReadyTTL           time.Duration
	MaxUploadBytes     int64
	CORSAllowedOrigins []string
	// StallTimeout cuts off a streaming body that moves no byte for this
	// long; 0 means 30 s.
	StallTimeout time.Duration
	// Tracer makes one server span per request (trace.go); nil: none.
	Tracer trace.TracerProvider
}

// Server is the HTTP API.
type Server struct {
	log          *slog.Logger
	auth         Authenticator
	storage      ports.Storage
	business     ports.Business
	searcher     ports.Search
	scheduling   ports.Scheduling
	links        ports.Links
	webhooks     ports.Webhooks
	tenancy      ports.Tenancy
	auditor      Auditor
	ready        func(ctx context.Context) error
	sync         func() []ehr.SyncState
	scanner      func(ctx context.Context) ScannerState
	scannerLoad  func() ScannerLoad
	readiness    *readiness
	maxUpload    int64
	corsOrigins  []string
	stallTimeout time.Duration
	metrics      *metrics
	ids          *requestIDs
	tracer       trace.Tracer // nil: no spans
	handler      http.Handler
	router       *mux.Router // every route; the API document's test walks it
}

// New returns the API with every route.
func New(cfg Config) *Server {
	s := &Server{
		log:          cfg.Log,
		auth:         cfg.Auth,
		storage:      cfg.Storage,
		business:     cfg.Business,
		searcher:     cfg.Search,
		scheduling:   cfg.Scheduling,
		links:        cfg.Links,
		webhooks:     cfg.Webhooks,
		tenancy:      cfg.Tenancy,
		auditor:      cfg.Audit,
		ready:        cfg.Ready,
		sync:         cfg.Sync,
		scanner:      cfg.Scanner,
		scannerLoad:  cfg.ScannerLoad,
		maxUpload:    cfg.MaxUploadBytes,
		corsOrigins:  cfg.CORSAllowedOrigins,
		stallTimeout: cfg.StallTimeout,
		metrics:      newMetrics(cfg.Registry),
		ids:          newRequestIDs(),
	}
	if s.stallTimeout == 0 {
		s.stallTimeout = 30 * time.Second
	}
	if s.auditor == nil {
		s.auditor = noAudit{}
	}
	s.readiness = &readiness{check: s.probe, ttl: cmp.Or(cfg.ReadyTTL, DefaultReadyTTL)}
	if cfg.Tracer != nil {
		s.tracer = cfg.Tracer.Tracer(tracerName)
	}

	s.handler = s.observe(s.cors(s.routes(cfg.Registry)))
	return s
}

// routes is the router of every route; reg is what /metrics serves.
func (s *Server) routes(reg *prometheus.Registry) *mux.Router {
	r := mux.NewRouter()
	r.Use(routeName)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errNotFound) })
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, errMethodNotAllowed) })

	// Business routes first: they are the most requested, and gorilla/mux
	// tries routes in order.
	s.businessRoutes(r)
	r.HandleFunc("/healthz", s.healthz).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	r.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{})).Methods(http.MethodGet)
	s.apiDocRoutes(r)
	s.docsRoutes(r)

	r.Handle("/api/v1/search", noStore(s.audited(audit.PatientSearch, "patient", s.acting(ehr.UseSearch, s.search)))).Methods(http.MethodPost)
	s.schedulingRoutes(r)
	s.linkRoutes(r)
	s.webhookRoutes(r)
	s.blobRoutes(r)
	return r
}

// blobRoutes are /cloud-blob: every request audited, no answer cached.
func (s *Server) blobRoutes(r *mux.Router) {
	blob := func(action audit.Action, h http.HandlerFunc) http.Handler {
		return noStore(s.audited(action, "blob", h))
	}
	r.Handle("/cloud-blob/upload", blob(audit.BlobUpload, s.upload)).Methods(http.MethodPost)
	r.Handle("/cloud-blob/download/{id}", blob(audit.BlobDownload, s.download)).Methods(http.MethodGet)
	r.Handle("/cloud-blob/metadata/{id}", blob(audit.BlobMetadata, s.metadata)).Methods(http.MethodGet)
	r.Handle("/cloud-blob/{id}", blob(audit.BlobDelete, s.deleteBlob)).Methods(http.MethodDelete)
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
