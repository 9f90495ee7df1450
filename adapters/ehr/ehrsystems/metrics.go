package ehrsystems

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/ehr/ehrhttp"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
)

// ehrMetrics are the EHR adapters' collectors on the app's registry. The
// adapters do not know Prometheus: each system's get a systemMetrics bound
// to its name (ehrkind.Metrics), so the ehr label only takes the names of the EHR systems
// file, and the outcome label only ehrhttp.Outcomes.
type ehrMetrics struct {
	requests   *prometheus.CounterVec   // ehr, outcome
	duration   *prometheus.HistogramVec // ehr
	retries    *prometheus.CounterVec   // ehr
	limitWaits *prometheus.HistogramVec // ehr
	breaker    *prometheus.GaugeVec     // ehr
	linkUp     *prometheus.GaugeVec     // ehr (systems with a link)
	reconnects *prometheus.CounterVec   // ehr (systems with a link)
}

func newEHRMetrics(reg prometheus.Registerer) *ehrMetrics {
	m := &ehrMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_requests_total",
			Help: "Calls to an EHR system's HTTP API by outcome (retries included in one call).",
		}, []string{"ehr", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carebridge_ehr_request_duration_seconds",
			Help:    "Duration of calls to an EHR system's HTTP API, retries and waits included.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"ehr"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_retries_total",
			Help: "Attempts after the first of calls to an EHR system's HTTP API.",
		}, []string{"ehr"}),
		limitWaits: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carebridge_ehr_rate_limit_wait_seconds",
			Help:    "Waits imposed by an EHR system's requests_per_minute limit (refusals count as outcome rate_limited).",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"ehr"}),
		breaker: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carebridge_ehr_breaker_state",
			Help: "Circuit breaker of an EHR system: 0 closed, 1 half-open, 2 open.",
		}, []string{"ehr"}),
		linkUp: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "carebridge_ehr_wsbot_link_up",
			Help: "Whether the WebSocket link to a bot EHR system is open (1) or not (0).",
		}, []string{"ehr"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_ehr_wsbot_reconnects_total",
			Help: "WebSocket links to a bot EHR system opened after the first.",
		}, []string{"ehr"}),
	}
	reg.MustRegister(m.requests, m.duration, m.retries, m.limitWaits, m.breaker, m.linkUp, m.reconnects)
	return m
}

// system returns the metrics of the EHR system name, its series created
// at zero so that /metrics shows them before the first call. link (a kind
// whose systems keep a link) adds the link's series.
func (m *ehrMetrics) system(name string, link bool) *systemMetrics {
	s := &systemMetrics{
		requests:   make(map[string]prometheus.Counter, len(ehrhttp.Outcomes)),
		duration:   m.duration.WithLabelValues(name),
		retries:    m.retries.WithLabelValues(name),
		limitWaits: m.limitWaits.WithLabelValues(name),
		breaker:    m.breaker.WithLabelValues(name),
	}
	for _, o := range ehrhttp.Outcomes {
		s.requests[o] = m.requests.WithLabelValues(name, o)
	}
	if link {
		s.linkUp = m.linkUp.WithLabelValues(name)
		s.reconnects = m.reconnects.WithLabelValues(name)
	}
	return s
}

// forget removes the series of the EHR system name, which a reload of the
// EHR systems file removed.
func (m *ehrMetrics) forget(name string) {
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.requests, m.duration, m.retries, m.limitWaits, m.breaker, m.linkUp, m.reconnects,
	} {
		v.DeletePartialMatch(prometheus.Labels{"ehr": name})
	}
}

// systemMetrics are one EHR system's series: ehrhttp.Metrics and those of
// a link (ehrkind.Metrics). Its map is only read after system built it.
type systemMetrics struct {
	requests   map[string]prometheus.Counter // by outcome
	duration   prometheus.Observer
	retries    prometheus.Counter
	limitWaits prometheus.Observer
	breaker    prometheus.Gauge
	linkUp     prometheus.Gauge   // nil: no link
	reconnects prometheus.Counter // nil: no link
}

var _ ehrkind.Metrics = (*systemMetrics)(nil)

func (s *systemMetrics) Request(outcome string, took time.Duration, retries int) {
	c, ok := s.requests[outcome]
	if !ok {
		c = s.requests[ehrhttp.OutcomeError] // bounded: an unknown outcome is not a new series
	}
	c.Inc()
	s.duration.Observe(took.Seconds())
	if retries > 0 {
		s.retries.Add(float64(retries))
	}
}

func (s *systemMetrics) RateLimitWait(wait time.Duration) { s.limitWaits.Observe(wait.Seconds()) }

func (s *systemMetrics) BreakerState(state int) { s.breaker.Set(float64(state)) }

func (s *systemMetrics) LinkUp(up bool) {
	if s.linkUp == nil {
		return
	}
	v := 0.0
	if up {
		v = 1
	}
	s.linkUp.Set(v)
}

func (s *systemMetrics) Reconnect() {
	if s.reconnects != nil {
		s.reconnects.Inc()
	}
}
