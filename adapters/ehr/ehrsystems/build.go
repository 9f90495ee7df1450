package ehrsystems

import (
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
	"github.com/carebridge/carebridge/core/ehr"
)

// ehrSystem is one system of the EHR systems file, adapted; reloads that
// leave its configuration as it was keep it, with its breaker, token cache,
// rate limiter and link.
type ehrSystem struct {
	cfg       ehrconfig.System
	search    ehr.System
	scheduler ehr.Scheduler
	changes   ehr.ChangeFeed // nil: its kind cannot tell its changes
	link      io.Closer      // nil: its kind keeps none
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
func (e *Systems) build(cfg *ehrconfig.Config, old *ehrSet) (_ *ehrSet, kept map[*ehrSystem]bool, err error) {
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

// adapt builds one system through its adapter kind: its patient search,
// records, Scheduler, change feed and link, as the kind has them.
func (e *Systems) adapt(s ehrconfig.System) (*ehrSystem, error) {
	kind, ok := e.kinds.kind(s.Adapter)
	if !ok {
		return nil, fmt.Errorf("EHR system %s: unknown adapter %q", s.Name, s.Adapter)
	}
	deps := ehrkind.Deps{Log: e.log, Metrics: e.metrics.system(s.Name, kind.Link), Tracer: e.tracer}
	a, err := kind.New(deps, s)
	if err != nil {
		return nil, fmt.Errorf("EHR system %s: %w", s.Name, err)
	}
	types := make([]string, len(s.SearchTypes))
	for i, t := range s.SearchTypes {
		types[i] = string(t)
	}
	return &ehrSystem{
		cfg:       s,
		search:    ehr.System{Name: s.Name, SearchTypes: types, Sites: s.Sites, Patients: a.Patients, Records: a.Records},
		scheduler: a.Scheduler,
		changes:   a.Changes,
		link:      a.Link,
	}, nil
}
