package ehrsystems

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
)

// syncKinds are the values of the kind label of
// carebridge_ehr_sync_changes_total: the events published by type (origin
// ehr; a reconciliation's deletions are cancelled), and the changes taken
// in without an event: unchanged (a version already known), skipped
// (unusable: no time, agent or status) and baseline (the first sweep of
// a system, which publishes nothing). A change Carebridge made itself
// (its api event is published) is counted in none of them.
var syncKinds = []string{"booked", "rescheduled", "cancelled", "status_changed", "unchanged", "skipped", "baseline"}

// syncMetrics are the collectors of EHR sync on the app's registry, by
// EHR system (the names of the EHR systems file only). The lag gauges are
// computed from the board when /metrics is scraped, so they grow while a
// poll hangs too.
type syncMetrics struct {
	changes  *prometheus.CounterVec   // ehr, kind
	duration *prometheus.HistogramVec // ehr
	failures *prometheus.CounterVec   // ehr, code
	clock    *prometheus.CounterVec   // ehr, kind (clockKinds)
}

// clockKinds are the values of the kind label of
// carebridge_ehr_sync_clock_anomalies_total: change (a change, of a new
// version, whose EHR time lay past the EHR's clock at the poll; published,
// but the watermark did not follow it) and watermark (a stored watermark
// found past it and set back).
var clockKinds = []string{"change", "watermark"}

func newSyncMetrics(reg prometheus.Registerer, board *syncBoard) *syncMetrics {
	m := &syncMetrics{
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_sync_changes_total",
			Help: "Appointment changes heard from an EHR system by its poller, by kind: the events published (booked, rescheduled, cancelled, status_changed) and the changes taken in without one (unchanged, skipped, baseline).",
		}, []string{"ehr", "kind"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carebridge_ehr_sync_poll_duration_seconds",
			Help:    "Duration of the polls of an EHR system's appointment changes that this instance made (it held the lease).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"ehr"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_sync_poll_failures_total",
			Help: "Failed polls of an EHR system's appointment changes by this instance, by error code.",
		}, []string{"ehr", "code"}),
		clock: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_sync_clock_anomalies_total",
			Help: "Times an EHR system's poller found past the EHR's own clock at the poll (its HTTP Date to the second, and never more than a minute past this instance's clock), by kind: change (a change dated ahead, published without moving the watermark) and watermark (a watermark found ahead and set back).",
		}, []string{"ehr", "kind"}),
	}
	reg.MustRegister(m.changes, m.duration, m.failures, m.clock, lagCollector{board: board})
	return m
}

var (
	lagDesc = prometheus.NewDesc("carebridge_ehr_sync_lag_seconds",
		"Seconds since the last successful poll of an EHR system's appointment changes by any instance, as this instance last saw it (since its poller started when it has seen none).",
		[]string{"ehr"}, nil)
	watermarkAgeDesc = prometheus.NewDesc("carebridge_ehr_sync_watermark_age_seconds",
		"Seconds from the newest change taken in from an EHR system (the EHR's own time: its watermark) to now; it grows while the EHR is quiet too.",
		[]string{"ehr"}, nil)
)

// lagCollector computes the lag gauges of the systems on the board at
// each scrape; a system whose poller ended for good (an EHR that cannot
// tell its changes) has none.
type lagCollector struct{ board *syncBoard }

func (c lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- lagDesc
	ch <- watermarkAgeDesc
}

func (c lagCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	for name, e := range c.board.snapshot() {
		if e.off {
			continue
		}
		ch <- prometheus.MustNewConstMetric(lagDesc, prometheus.GaugeValue, e.lag(now).Seconds(), name)
		if !e.watermark.IsZero() {
			ch <- prometheus.MustNewConstMetric(watermarkAgeDesc, prometheus.GaugeValue, now.Sub(e.watermark).Seconds(), name)
		}
	}
}

// systemSync are one system's series (a failure's, by its code, are
// made as they come).
type systemSync struct {
	m        *syncMetrics
	name     string
	changes  map[string]prometheus.Counter // by kind
	clock    map[string]prometheus.Counter // by kind
	duration prometheus.Observer
}

// system returns the series of the system name, those of every kind
// created at zero.
func (m *syncMetrics) system(name string) *systemSync {
	return &systemSync{m: m, name: name, changes: counters(m.changes, name, syncKinds),
		clock: counters(m.clock, name, clockKinds), duration: m.duration.WithLabelValues(name)}
}

// counters are the series of v of the system name, by kind.
func counters(v *prometheus.CounterVec, name string, kinds []string) map[string]prometheus.Counter {
	out := make(map[string]prometheus.Counter, len(kinds))
	for _, k := range kinds {
		out[k] = v.WithLabelValues(name, k)
	}
	return out
}

// forget removes the series of a system a reload removed.
func (m *syncMetrics) forget(name string) {
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.changes, m.duration, m.failures, m.clock} {
		v.DeletePartialMatch(prometheus.Labels{"ehr": name})
	}
}

// observe counts what a poll this instance made took in.
func (s *systemSync) observe(res ehr.PollResult, took time.Duration) {
	s.duration.Observe(took.Seconds())
	for t, n := range res.Events {
		if c, ok := s.changes[strings.TrimPrefix(string(t), "appointment.")]; ok {
			c.Add(float64(n))
		}
	}
	s.changes["unchanged"].Add(float64(res.Unchanged))
	s.changes["skipped"].Add(float64(res.Skipped))
	if res.Baseline {
		s.changes["baseline"].Add(float64(res.Changes - res.Unchanged - res.Skipped))
	}
	s.clock["change"].Add(float64(res.Ahead))
	if !res.Rewound.IsZero() {
		s.clock["watermark"].Inc()
	}
}

// reconciled counts the deletions a reconciliation published.
func (s *systemSync) reconciled(res ehr.Reconciliation) {
	s.changes["cancelled"].Add(float64(res.Cancelled))
}

func (s *systemSync) failed(code string) { s.m.failures.WithLabelValues(s.name, code).Inc() }

// syncEntry is where one system's sync stands, as this instance knows it.
type syncEntry struct {
	started   time.Time // this instance's poller started
	lastOK    time.Time // the last successful poll (any instance; zero: none seen)
	lastPoll  time.Time // the last poll (any instance; zero: none seen)
	watermark time.Time // the EHR's time of the newest change taken in
	lastError string    // the last poll's failure code ("" none)
	off       bool      // the poller ended for good
}

// lag is the time since the last successful poll seen, else since the
// poller started.
func (e syncEntry) lag(now time.Time) time.Duration {
	return now.Sub(cmpTime(e.lastOK, e.started))
}

// cmpTime is t, or else when t is zero.
func cmpTime(t, otherwise time.Time) time.Time {
	if t.IsZero() {
		return otherwise
	}
	return t
}

// syncBoard is where every polled system stands, for /readyz and the lag
// gauges: the outcomes of this instance's polls, and the cursors of the
// systems another instance polls (read each interval).
type syncBoard struct {
	mu      sync.Mutex
	systems map[string]syncEntry
}

func newSyncBoard() *syncBoard { return &syncBoard{systems: map[string]syncEntry{}} }

func (b *syncBoard) update(name string, f func(*syncEntry)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.systems[name]
	f(&e)
	b.systems[name] = e
}

// start notes a poller started at now; what is known of the system stays.
func (b *syncBoard) start(name string, now time.Time) {
	b.update(name, func(e *syncEntry) { e.started, e.off = now, false })
}

// stop notes a poller that ended for good.
func (b *syncBoard) stop(name string) {
	b.update(name, func(e *syncEntry) { e.off = true })
}

// polled notes a successful poll by this instance.
func (b *syncBoard) polled(name string, now, watermark time.Time) {
	b.update(name, func(e *syncEntry) {
		e.lastOK, e.lastPoll, e.watermark, e.lastError = now, now, watermark, ""
	})
}

// failed notes a failed poll by this instance.
func (b *syncBoard) failed(name, code string) {
	b.update(name, func(e *syncEntry) { e.lastPoll, e.lastError = time.Now(), code })
}

// observe takes in the cursor of a system another instance polls.
func (b *syncBoard) observe(name string, st ehr.SyncStatus) {
	b.update(name, func(e *syncEntry) {
		if st.LastPollAt.After(e.lastPoll) {
			e.lastPoll, e.lastError = st.LastPollAt, st.LastError
			if st.LastError == "" {
				e.lastOK = st.LastPollAt
			}
		}
		if st.Watermark.After(e.watermark) {
			e.watermark = st.Watermark
		}
	})
}

func (b *syncBoard) forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.systems, name)
}

func (b *syncBoard) snapshot() map[string]syncEntry {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.systems)
}

// states is the board for /readyz, by system name.
func (b *syncBoard) states() []ehr.SyncState {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	out := make([]ehr.SyncState, 0, len(b.systems))
	for name, e := range b.systems {
		out = append(out, ehr.SyncState{EHR: name, Lag: e.lag(now), Watermark: e.watermark, LastPollAt: e.lastPoll, LastError: e.lastError})
	}
	slices.SortFunc(out, func(x, y ehr.SyncState) int { return strings.Compare(x.EHR, y.EHR) })
	return out
}
