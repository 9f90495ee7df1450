package app

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core/ehr"
)

// linkGrace is how long the WebSocket link of a system a reload removed
// (or changed) stays open for the requests that started before: longer
// than a booking's EHR calls (90 s) and a search of any sane timeout and
// retry_attempts. A call still running then fails as the link closes.
const linkGrace = 5 * time.Minute

// ehrSystem is one system of the EHR systems file, adapted; reloads that
// leave its configuration as it was keep it, with its breaker, token cache,
// rate limiter and link.
type ehrSystem struct {
	cfg       ehrconfig.System
	search    ehr.System
	scheduler ehr.Scheduler
	link      io.Closer // the bot's WebSocket link; nil for fhir
}

// ehrSet is the systems of one reading of the EHR systems file, never
// changed once built: the search's systems and the integration EHR, of
// each business the file names and of any other.
type ehrSet struct {
	systems []*ehrSystem // in file order
	multi   bool         // some system has businesses
	// search and integration are those of a business the file does not
	// name (and of "", none): the systems without businesses, and
	// integration.ehr when it is one of them (none: no name).
	search      []ehr.System
	integration integration
	// bySearch and byIntegration are those of each business the file
	// names.
	bySearch      map[string][]ehr.System
	byIntegration map[string]integration
	// syncs are the systems with sync on whose adapter has a change
	// feed, by name.
	syncs map[string]syncTarget
}

// integration is the integration EHR of a business: the system's name and
// its Scheduler ("" and nil: none).
type integration struct {
	name string
	sch  ehr.Scheduler
}

// ehrs is the EHR systems in force (ehr.Systems): each call answers from
// the set of the last reading of the file, and a reload swaps the set, so a
// request that asked before keeps the systems it got.
type ehrs struct {
	log     *slog.Logger
	metrics *ehrMetrics
	tracer  trace.TracerProvider // nil: no spans of EHR calls
	grace   time.Duration        // linkGrace; tests shorten it
	cur     atomic.Pointer[ehrSet]
	// changed is signalled (never blocking) after each reload that put
	// new systems in force; the sync loops' supervisor waits on it.
	changed chan struct{}

	mu       sync.Mutex // one reload at a time; guards retiring and closed
	retiring map[*time.Timer][]io.Closer
	closed   bool
}

var _ ehr.Systems = (*ehrs)(nil)

// newEHRs adapts every system of cfg (nil: none); tracer (nil: none) makes
// the spans of their calls.
func newEHRs(cfg *ehrconfig.Config, log *slog.Logger, metrics *ehrMetrics, tracer trace.TracerProvider) (*ehrs, error) {
	e := &ehrs{log: log, metrics: metrics, tracer: tracer, grace: linkGrace, retiring: map[*time.Timer][]io.Closer{}, changed: make(chan struct{}, 1)}
	set, _, err := e.build(cfg, &ehrSet{})
	if err != nil {
		return nil, err
	}
	e.cur.Store(set)
	return e, nil
}

// Search returns the systems the search asks for business: those serving
// it.
func (e *ehrs) Search(business string) []ehr.System {
	set := e.cur.Load()
	if s, ok := set.bySearch[business]; ok {
		return s
	}
	return set.search
}

// Integration returns the name and Scheduler of the integration EHR of
// business (nil: none).
func (e *ehrs) Integration(business string) (string, ehr.Scheduler) {
	in := e.integrationOf(business)
	return in.name, in.sch
}

// integrationOf is the integration EHR of business in the systems in
// force.
func (e *ehrs) integrationOf(business string) integration {
	set := e.cur.Load()
	if in, ok := set.byIntegration[business]; ok {
		return in
	}
	return set.integration
}

// SchedulerOf returns the Scheduler of the system called name, whichever
// businesses it serves (nil: no such system in force).
func (e *ehrs) SchedulerOf(name string) ehr.Scheduler {
	if sys, ok := e.cur.Load().byName(name); ok {
		return sys.scheduler
	}
	return nil
}

// MultiPractice reports whether some system of the file has businesses.
func (e *ehrs) MultiPractice() bool { return e.cur.Load().multi }

// reload swaps in the systems of cfg (nil: none). A system whose
// configuration is unchanged, secrets included, is kept as it is; the links
// of the others are closed after linkGrace. When a system cannot be built
// nothing changes.
func (e *ehrs) reload(cfg *ehrconfig.Config) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("EHR systems: closed")
	}
	old := e.cur.Load()
	set, kept, err := e.build(cfg, old)
	if err != nil {
		return err
	}
	e.cur.Store(set)
	select {
	case e.changed <- struct{}{}:
	default: // a signal is pending already
	}
	var links []io.Closer
	for _, s := range old.systems {
		if kept[s] {
			continue
		}
		if s.link != nil {
			links = append(links, s.link)
		}
		if _, still := set.byName(s.cfg.Name); !still {
			e.metrics.forget(s.cfg.Name)
		}
	}
	if len(links) > 0 {
		var t *time.Timer
		t = time.AfterFunc(e.grace, func() {
			e.mu.Lock()
			links, ok := e.retiring[t]
			delete(e.retiring, t)
			e.mu.Unlock()
			if ok {
				closeAll(e.log, links)
			}
		})
		e.retiring[t] = links
	}
	return nil
}

// Close closes every link, those of removed systems included.
func (e *ehrs) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	for t, links := range e.retiring {
		t.Stop()
		closeAll(e.log, links)
	}
	clear(e.retiring)
	closeAll(e.log, e.cur.Load().links())
	return nil
}

func (s *ehrSet) links() []io.Closer {
	var out []io.Closer
	for _, sys := range s.systems {
		if sys.link != nil {
			out = append(out, sys.link)
		}
	}
	return out
}

func (s *ehrSet) byName(name string) (*ehrSystem, bool) {
	for _, sys := range s.systems {
		if sys.cfg.Name == name {
			return sys, true
		}
	}
	return nil, false
}

// build adapts every system of cfg, taking those of old whose configuration
// is the same (kept lists them); when one fails, it closes the links it
// opened.
func (e *ehrs) build(cfg *ehrconfig.Config, old *ehrSet) (_ *ehrSet, kept map[*ehrSystem]bool, err error) {
	set, kept := &ehrSet{}, map[*ehrSystem]bool{}
	if cfg == nil {
		return set, kept, nil
	}
	var opened []io.Closer
	defer func() {
		if err != nil {
			closeAll(e.log, opened)
		}
	}()
	for _, c := range cfg.Systems {
		s, ok := old.byName(c.Name)
		if ok && reflect.DeepEqual(s.cfg, c) {
			kept[s] = true
		} else {
			if s, err = e.adapt(c); err != nil {
				return nil, nil, err
			}
			if s.link != nil {
				opened = append(opened, s.link)
			}
		}
		set.systems = append(set.systems, s)
	}
	set.index(cfg)
	return set, kept, nil
}

// index finds the systems and the integration EHR of every business cfg
// names, and of any other.
func (s *ehrSet) index(cfg *ehrconfig.Config) {
	s.multi = cfg.MultiPractice()
	integrationOf := func(business string) integration {
		if name, ok := cfg.IntegrationFor(business); ok {
			if sys, ok := s.byName(name); ok {
				return integration{name: name, sch: sys.scheduler}
			}
		}
		return integration{}
	}
	search := func(business string) []ehr.System {
		var out []ehr.System
		for _, sys := range s.systems {
			if cfg.Serves(sys.cfg.Name, business) {
				out = append(out, sys.search)
			}
		}
		return out
	}
	s.search, s.integration = search(""), integrationOf("")
	s.bySearch, s.byIntegration = map[string][]ehr.System{}, map[string]integration{}
	named := slices.Collect(maps.Keys(cfg.Integration.ByBusiness))
	for _, sys := range cfg.Systems {
		named = append(named, sys.Businesses...)
	}
	for _, b := range named {
		s.bySearch[b], s.byIntegration[b] = search(b), integrationOf(b)
	}
	s.syncs = syncTargets(cfg, s.systems)
}

// adapt makes the clients of one system: its patient search and Scheduler.
func (e *ehrs) adapt(s ehrconfig.System) (*ehrSystem, error) {
	log := e.log
	sm := e.metrics.system(s.Name, s.Adapter == ehrconfig.AdapterWSBot)
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
		Tracer:            e.tracer,
		PropagateTrace:    s.PropagateTrace,
	})
	if err != nil {
		return nil, fmt.Errorf("EHR system %s: %w", s.Name, err)
	}
	types := make([]string, len(s.SearchTypes))
	for i, t := range s.SearchTypes {
		types[i] = string(t)
	}
	out := &ehrSystem{cfg: s, search: ehr.System{Name: s.Name, SearchTypes: types, Sites: s.Sites}}
	switch s.Adapter {
	case ehrconfig.AdapterFHIR:
		fc := fhir.New(client, s.SearchEndpoint)
		out.search.Patients, out.search.Records = fc, fc
		out.scheduler = fhir.NewScheduler(client, fhir.WithLogger(log.With("component", "fhir", "ehr", s.Name)))
	case ehrconfig.AdapterWSBot:
		bot, err := wsbot.New(wsbot.Config{
			Name: s.Name, URL: s.BaseURL, SearchAction: s.SearchEndpoint, CallTimeout: s.Timeout,
			Header: client.AuthHeader, Logger: log.With("component", "wsbot", "ehr", s.Name),
			Metrics: sm, Tracer: e.tracer,
		})
		if err != nil {
			return nil, fmt.Errorf("EHR system %s: %w", s.Name, err)
		}
		out.search.Patients, out.search.Records, out.scheduler, out.link = bot, bot, bot, bot
	default:
		return nil, fmt.Errorf("EHR system %s: unknown adapter %q", s.Name, s.Adapter)
	}
	return out, nil
}
