package httpapi

import (
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	uploaded   prometheus.Counter
	downloaded prometheus.Counter

	// series holds the counter and histogram of each route, method and
	// status seen: looking a label set up in a Vec hashes and locks on
	// every request.
	series sync.Map // seriesKey -> *requestSeries
}

type seriesKey struct {
	route, method string
	status        int
}

type requestSeries struct {
	count   prometheus.Counter
	latency prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "carebridge_http_requests_total",
			Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "carebridge_http_request_duration_seconds",
			Help:    "HTTP request latency by route pattern and method.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method"}),
		uploaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carebridge_blob_uploaded_bytes_total",
			Help: "Plaintext bytes of files uploaded and stored.",
		}),
		downloaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "carebridge_blob_downloaded_bytes_total",
			Help: "Plaintext bytes of files sent to clients.",
		}),
	}
	reg.MustRegister(m.requests, m.latency, m.uploaded, m.downloaded)
	return m
}

// observe counts one request and records its latency. The route is a
// pattern of the router (or "unmatched") and a method outside the standard
// ones is "OTHER", so a client cannot make new series at will.
func (m *metrics) observe(route, method string, status int, elapsed time.Duration) {
	switch method {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS":
	default:
		method = "OTHER"
	}
	k := seriesKey{route: route, method: method, status: status}
	v, ok := m.series.Load(k)
	if !ok {
		v, _ = m.series.LoadOrStore(k, &requestSeries{
			count:   m.requests.WithLabelValues(route, method, strconv.Itoa(status)),
			latency: m.latency.WithLabelValues(route, method),
		})
	}
	rs := v.(*requestSeries)
	rs.count.Inc()
	rs.latency.Observe(elapsed.Seconds())
}
