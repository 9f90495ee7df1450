package ehrsystems

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// testKinds are the kinds app registers.
func testKinds() Kinds { return NewKinds(fhir.Kind(), wsbot.Kind()) }

func parseEHR(t *testing.T, yaml string) *ehrconfig.Config {
	t.Helper()
	cfg, err := testKinds().Parse([]byte(yaml), nil, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, yaml)
	}
	return cfg
}

func names(systems []ehr.System) string {
	var out []string
	for _, s := range systems {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

// searchCode is the code of the error a search of s answers (the EHRs of
// these tests listen nowhere).
func searchCode(s ehr.System) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.Patients.SearchPatients(ctx, ehr.PatientQuery{Text: "x"})
	var e *core.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

const (
	fileA    = "  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', timeout: 200}\n"
	fileBot  = "  - {name: bot, adapter: wsbot, base_url: 'ws://127.0.0.1:1/bot', timeout: 200}\n"
	fileC    = "  - {name: c, adapter: fhir, base_url: 'http://127.0.0.1:3/fhir', timeout: 200}\n"
	fileACh  = "  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', timeout: 300}\n"
	integrat = "integration: {ehr: a}\n"
)

func TestEHRs_ReloadKeepsUnchangedSystemsAndRetiresTheOthers(t *testing.T) {
	registry := prometheus.NewRegistry()
	e, err := newSystems(parseEHR(t, "ehr_systems:\n"+fileA+fileBot+integrat), testKinds(), slog.New(slog.DiscardHandler), newEHRMetrics(registry), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	e.grace = time.Millisecond
	before := e.Search("")
	if names(before) != "a,bot" || e.scheduler("") == nil {
		t.Fatalf("systems %s, scheduler %v", names(before), e.scheduler(""))
	}

	if err := e.Reload(parseEHR(t, "ehr_systems:\n"+fileA+fileC+integrat)); err != nil {
		t.Fatal(err)
	}
	after := e.Search("")
	if names(after) != "a,c" {
		t.Fatalf("after the reload: %s", names(after))
	}
	if after[0].Patients != before[0].Patients || e.scheduler("") == nil {
		t.Error("the unchanged system a has new clients: its breaker, token cache and rate limiter are lost")
	}
	if names(before) != "a,bot" {
		t.Errorf("the set a request got changed under it: %s", names(before))
	}
	// The removed bot's link closes once its grace is over.
	deadline := time.Now().Add(10 * time.Second)
	for searchCode(before[1]) != "ehr_closed" {
		if time.Now().After(deadline) {
			t.Fatal("the link of the removed bot is still open")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if page := gathered(t, registry); strings.Contains(page, `ehr="bot"`) || !strings.Contains(page, `ehr="c"`) {
		t.Errorf("series: removed bot kept or c missing:\n%s", page)
	}

	// A changed system gets new clients.
	if err := e.Reload(parseEHR(t, "ehr_systems:\n"+fileACh+fileC+integrat)); err != nil {
		t.Fatal(err)
	}
	if now := e.Search(""); now[0].Patients == after[0].Patients || now[1].Patients != after[1].Patients {
		t.Error("a changed system kept its clients, or an unchanged one lost them")
	}

	// No file: no systems, no integration.
	if err := e.Reload(nil); err != nil || len(e.Search("")) != 0 || e.scheduler("") != nil {
		t.Fatalf("reload(nil): %v, %s, %v", err, names(e.Search("")), e.scheduler(""))
	}
}

func TestEHRs_ASystemThatCannotBeBuiltLeavesTheSystemsInForce(t *testing.T) {
	e, err := newSystems(parseEHR(t, "ehr_systems:\n"+fileA+integrat), testKinds(), slog.New(slog.DiscardHandler), newEHRMetrics(prometheus.NewRegistry()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	bad := parseEHR(t, "ehr_systems:\n"+fileBot+fileC)
	bad.Systems[1].Adapter = "carrier-pigeon" // what validation lets through no more
	if err := e.Reload(bad); err == nil || !strings.Contains(err.Error(), "system c") {
		t.Fatalf("reload: %v", err)
	}
	if names(e.Search("")) != "a" || e.scheduler("") == nil {
		t.Fatalf("systems in force: %s", names(e.Search("")))
	}
}

func TestEHRs_CloseClosesEveryLinkAndRefusesReloads(t *testing.T) {
	e, err := newSystems(parseEHR(t, "ehr_systems:\n"+fileBot), testKinds(), slog.New(slog.DiscardHandler), newEHRMetrics(prometheus.NewRegistry()), nil)
	if err != nil {
		t.Fatal(err)
	}
	bot := e.Search("")[0]
	if err := e.Reload(parseEHR(t, "ehr_systems:\n"+fileA)); err != nil { // the bot waits out its grace
		t.Fatal(err)
	}
	e.Close()
	if code := searchCode(bot); code != "ehr_closed" {
		t.Errorf("removed bot after Close: %q, want ehr_closed", code)
	}
	if err := e.Reload(parseEHR(t, "ehr_systems:\n"+fileA)); err == nil {
		t.Error("reload after Close succeeded")
	}
}

func gathered(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				io.WriteString(&b, mf.GetName()+" "+l.GetName()+"=\""+l.GetValue()+"\"\n")
			}
		}
	}
	return b.String()
}

func TestEHRs_AnswerEachBusinessWithTheSystemsServingIt(t *testing.T) {
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	file := "ehr_systems:\n" +
		"  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', timeout: 200, businesses: [" + a + "]}\n" +
		"  - {name: b, adapter: fhir, base_url: 'http://127.0.0.1:2/fhir', timeout: 200, businesses: [" + b + "]}\n" +
		"  - {name: c, adapter: fhir, base_url: 'http://127.0.0.1:3/fhir', timeout: 200}\n" +
		"integration: {ehr: c, by_business: {" + b + ": b}}\n"
	e, err := newSystems(parseEHR(t, file), testKinds(), slog.New(slog.DiscardHandler), newEHRMetrics(prometheus.NewRegistry()), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !e.MultiPractice() {
		t.Fatal("a file with businesses is multi-practice")
	}
	for _, tc := range []struct{ business, search string }{{a, "a,c"}, {b, "b,c"}, {"cccccccc-0000-0000-0000-000000000003", "c"}, {"", "c"}} {
		if got := names(e.Search(tc.business)); got != tc.search {
			t.Errorf("search of %q asks %s, want %s", tc.business, got, tc.search)
		}
	}
	if e.scheduler(a) != e.byName(t, "c") || e.scheduler(b) != e.byName(t, "b") || e.scheduler("") != e.byName(t, "c") {
		t.Fatal("integration EHR: want by_business for b, integration.ehr (serving every business) otherwise")
	}
	// Each names its system, and every system's Scheduler is found by its
	// name, whichever businesses it serves.
	if name, _ := e.Integration(b); name != "b" {
		t.Errorf("the integration EHR of b is called %q", name)
	}
	if e.SchedulerOf("a") != e.byName(t, "a") || e.SchedulerOf("b") != e.byName(t, "b") || e.SchedulerOf("gone") != nil {
		t.Error("SchedulerOf finds the systems in force by name, and no other")
	}
}

// scheduler is the Scheduler of the integration EHR of business.
func (e *Systems) scheduler(business string) ehr.Scheduler {
	_, sch := e.Integration(business)
	return sch
}

func (e *Systems) byName(t *testing.T, name string) ehr.Scheduler {
	s, ok := e.cur.Load().byName(name)
	if !ok {
		t.Fatalf("no system %s", name)
	}
	return s.scheduler
}
