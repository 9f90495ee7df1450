package httpapi

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	uploaded   prometheus.Counter
	downloaded prometheus.Counter
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
