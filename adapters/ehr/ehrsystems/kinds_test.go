package ehrsystems

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr"
)

type stubScheduler struct{ ehr.Scheduler }

// A system is what its kind declares it can do: one without a change feed
// is not polled even with sync on, one without records searches none, and
// a kind not registered builds nothing.
func TestSystems_UseWhatEachKindDeclares(t *testing.T) {
	sch := &stubScheduler{}
	plain := ehrkind.Kind{
		Rules: ehrconfig.AdapterRules{Name: "plain", Scheme: "https", LoopbackScheme: "http",
			DefaultSearchEndpoint: "/p", SearchEndpoint: ehrconfig.PathEndpoint},
		New: func(ehrkind.Deps, ehrconfig.System) (ehrkind.Adapted, error) {
			return ehrkind.Adapted{Scheduler: sch}, nil
		},
	}
	kinds := NewKinds(plain, fhir.Kind())
	cfg, err := kinds.Parse([]byte("ehr_systems:\n"+
		"  - {name: p, adapter: plain, base_url: 'http://127.0.0.1:1/p'}\n"+
		"  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', sync: {interval: 30s}}\n"+
		"integration: {ehr: p}\n"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := newSystems(cfg, kinds, slog.New(slog.DiscardHandler), newEHRMetrics(prometheus.NewRegistry()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if name, got := e.Integration(""); name != "p" || got != sch {
		t.Errorf("integration EHR %q %v, want p and its Scheduler", name, got)
	}
	if s := e.Search(""); len(s) != 2 || s[0].Records != nil || s[1].Records == nil {
		t.Errorf("records of p and a: %+v", s)
	}
	if syncs := e.cur.Load().syncs; len(syncs) != 1 || syncs["a"].sys.changes == nil {
		t.Errorf("sync targets %+v, want a only (p has no change feed)", syncs)
	}
	cfg.Systems[0].Adapter = "gone"
	if err := e.Reload(cfg); err == nil || err.Error() != `EHR system p: unknown adapter "gone"` {
		t.Errorf("reload with a kind not registered: %v", err)
	}
}

// The kinds as they register themselves refuse propagate_trace for the
// bot with the words ehrconfig's tests expect: only fhir allows it.
func TestKinds_PropagateTraceOnlyForTheKindsThatAllowIt(t *testing.T) {
	_, err := testKinds().Parse([]byte("ehr_systems:\n"+
		"  - {name: a, adapter: fhir, base_url: 'https://a.example/fhir', propagate_trace: true}\n"+
		"  - {name: bot, adapter: wsbot, base_url: 'wss://b.example/bot', propagate_trace: true}\n"), nil, nil)
	const want = "ehr_systems[1] bot: propagate_trace: is only for adapter fhir (the bot protocol carries no trace context)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}
