package ehrsystems

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/promtest"
)

const (
	bizA = "aaaaaaaa-0000-4000-8000-000000000001"
	bizB = "bbbbbbbb-0000-4000-8000-000000000002"
	bizC = "cccccccc-0000-4000-8000-000000000003"
)

// The businesses a system's changes belong to follow the EHR systems
// file: by_business keys, the listed businesses falling to integration.ehr,
// and nil (any; none by default) for a system serving every business.
func TestSyncBusinesses_FollowTheEHRSystemsFile(t *testing.T) {
	sys := func(name, extra string) string {
		return fmt.Sprintf("  - {name: %s, adapter: fhir, base_url: 'http://127.0.0.1:1/%s'%s}\n", name, name, extra)
	}
	tests := []struct {
		name, yaml string
		want       map[string][]string // by system; nil: any
	}{
		{"single practice", "ehr_systems:\n" + sys("a", "") + "integration: {ehr: a}\n",
			map[string][]string{"a": nil}},
		{"by_business", "ehr_systems:\n" + sys("a", "") + sys("b", "") +
			"integration: {by_business: {" + bizA + ": a, " + bizB + ": b, " + bizC + ": a}}\n",
			map[string][]string{"a": {bizA, bizC}, "b": {bizB}}},
		{"default listing businesses", "ehr_systems:\n" + sys("a", ", businesses: ["+bizA+", "+bizB+"]") + sys("b", "") +
			"integration: {ehr: a, by_business: {" + bizB + ": b}}\n",
			map[string][]string{"a": {bizA}, "b": {bizB}}},
		{"default serving every business", "ehr_systems:\n" + sys("a", "") + sys("b", "") +
			"integration: {ehr: a, by_business: {" + bizB + ": b, " + bizA + ": a}}\n",
			map[string][]string{"a": nil, "b": {bizB}}},
		{"polled without being an integration EHR", "ehr_systems:\n" + sys("a", "") + sys("s", ", businesses: ["+bizC+"], sync: {interval: 30s}") +
			"integration: {ehr: a}\n",
			map[string][]string{"a": nil, "s": {bizC}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parseEHR(t, tt.yaml)
			for name, want := range tt.want {
				s, _ := cfg.System(name)
				got := syncBusinesses(cfg, s)
				if (got == nil) != (want == nil) || fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: %#v, want %#v", name, got, want)
				}
			}
		})
	}
}

// The systems polled are those with sync on whose adapter has a change
// feed; a reload signals the supervisor, and a system it keeps polls as
// before while a changed one is another target.
func TestSyncTargets_FollowReloads(t *testing.T) {
	off := "  - {name: off, adapter: fhir, base_url: 'http://127.0.0.1:2/fhir', sync: {interval: 0s}}\n"
	e, err := newSystems(parseEHR(t, "ehr_systems:\n"+fileA+fileBot+off+
		"integration: {ehr: a, by_business: {"+bizB+": bot, "+bizC+": off}}\n"), testKinds(), slog.New(slog.DiscardHandler), newEHRMetrics(prometheus.NewRegistry()), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	before := e.cur.Load().syncs
	if len(before) != 2 || before["a"].interval != ehrconfig.DefaultSyncInterval || before["bot"].sys.changes == nil || before["bot"].businesses[0] != bizB {
		t.Fatalf("targets %+v", before)
	}
	select {
	case <-e.changed:
		t.Fatal("signalled before any reload")
	default:
	}

	if err := e.Reload(parseEHR(t, "ehr_systems:\n"+fileACh+fileBot+"integration: {ehr: a, by_business: {"+bizB+": bot}}\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.changed:
	default:
		t.Fatal("a reload did not signal")
	}
	after := e.cur.Load().syncs
	if !after["bot"].same(before["bot"]) {
		t.Error("the unchanged bot is another target")
	}
	if after["a"].same(before["a"]) {
		t.Error("the changed system a is the same target")
	}
	if (syncTarget{sys: after["a"].sys}).same(syncTarget{sys: after["a"].sys, businesses: []string{}}) {
		t.Error("no business and any business are the same target")
	}
}

// The board keeps what this instance's polls and the others' cursors
// tell: the lag runs from the last successful poll seen.
func TestSyncBoard_LagRunsFromTheLastSuccessfulPoll(t *testing.T) {
	b := newSyncBoard()
	t0 := time.Now()
	b.start("a", t0)
	if lag := b.entry("a").lag(t0.Add(3 * time.Second)); lag != 3*time.Second {
		t.Errorf("lag before any poll: %s", lag)
	}
	b.polled("a", t0.Add(time.Second), t0.Add(-time.Minute))
	b.failed("a", "ehr_unavailable")
	e := b.entry("a")
	if e.lag(t0.Add(5*time.Second)) != 4*time.Second || e.lastError != "ehr_unavailable" {
		t.Errorf("after a failure: %+v", e)
	}
	later := time.Now().Add(time.Hour)
	b.observe("a", ehr.SyncStatus{Watermark: t0, LastPollAt: later})
	if e := b.entry("a"); !e.lastOK.Equal(later) || e.lastError != "" || !e.watermark.Equal(t0) {
		t.Errorf("after another instance's poll: %+v", e)
	}
	b.observe("a", ehr.SyncStatus{Watermark: t0.Add(-time.Hour), LastPollAt: later.Add(time.Second), LastError: "circuit_open"})
	if e := b.entry("a"); !e.lastOK.Equal(later) || e.lastError != "circuit_open" || !e.watermark.Equal(t0) {
		t.Errorf("after another instance's failed poll: %+v", e)
	}
	if st := b.states(); len(st) != 1 || st[0].EHR != "a" || st[0].LastError != "circuit_open" {
		t.Errorf("states %+v", st)
	}
	b.forget("a")
	if len(b.states()) != 0 {
		t.Error("a forgotten system is still shown")
	}
}

// The metrics count the events by type and the changes taken in without
// one, and a failure's code; nothing else becomes a label.
func TestSyncMetrics_CountChangesByKind(t *testing.T) {
	reg := prometheus.NewRegistry()
	board := newSyncBoard()
	m := newSyncMetrics(reg, board)
	s := m.system("a")
	s.observe(ehr.PollResult{Held: true, Baseline: true, Changes: 5, Skipped: 1, Unchanged: 1, Events: map[core.EventType]int{}}, time.Second)
	s.observe(ehr.PollResult{Held: true, Changes: 4, Unchanged: 1, Events: map[core.EventType]int{
		core.AppointmentBooked: 1, core.AppointmentRescheduled: 1, core.AppointmentStatusChanged: 1, "other.type": 7}}, time.Second)
	s.reconciled(ehr.Reconciliation{Held: true, Cancelled: 2})
	s.failed("ehr_timeout")
	for kind, want := range map[string]float64{"booked": 1, "rescheduled": 1, "status_changed": 1, "cancelled": 2, "unchanged": 2, "skipped": 1, "baseline": 3} {
		if v, _ := promtest.Value(t, reg, "carebridge_ehr_sync_changes_total", map[string]string{"ehr": "a", "kind": kind}); v != want {
			t.Errorf("%s: %v, want %v", kind, v, want)
		}
	}
	if v, _ := promtest.Value(t, reg, "carebridge_ehr_sync_poll_failures_total", map[string]string{"ehr": "a", "code": "ehr_timeout"}); v != 1 {
		t.Errorf("failures %v", v)
	}
	if v, _ := promtest.Value(t, reg, "carebridge_ehr_sync_poll_duration_seconds", map[string]string{"ehr": "a"}); v != 2 {
		t.Errorf("polls timed %v", v)
	}
	t0 := time.Now()
	board.start("a", t0.Add(-time.Minute))
	board.polled("a", t0.Add(-30*time.Second), t0.Add(-2*time.Hour))
	if v, ok := promtest.Value(t, reg, "carebridge_ehr_sync_lag_seconds", map[string]string{"ehr": "a"}); !ok || v < 30 || v > 60 {
		t.Errorf("lag %v (present %v), want about 30 s", v, ok)
	}
	if v, _ := promtest.Value(t, reg, "carebridge_ehr_sync_watermark_age_seconds", map[string]string{"ehr": "a"}); v < 7200 {
		t.Errorf("watermark age %v", v)
	}
	board.stop("a")
	if _, ok := promtest.Value(t, reg, "carebridge_ehr_sync_lag_seconds", map[string]string{"ehr": "a"}); ok {
		t.Error("a poller ended for good still has a lag")
	}
	m.forget("a")
	if _, ok := promtest.Value(t, reg, "carebridge_ehr_sync_changes_total", map[string]string{"ehr": "a", "kind": "booked"}); ok {
		t.Error("the series of a removed system remain")
	}
}

// entry is what the board holds of name.
func (b *syncBoard) entry(name string) syncEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.systems[name]
}
