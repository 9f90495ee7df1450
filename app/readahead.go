package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/storage"
)

// newReadAheadPool is the pool every encrypted download borrows its
// read-ahead buffers from, limit bytes in all (0: the default), with what
// it lends as metrics.
func newReadAheadPool(limit int64, reg *prometheus.Registry) *storage.ReadAheadPool {
	if limit == 0 {
		limit = storage.DefaultReadAheadBytes
	}
	pool := storage.NewReadAheadPool(limit)
	stat := func(v func(storage.ReadAheadStats) float64) func() float64 {
		return func() float64 { return v(pool.Stats()) }
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "carebridge_download_readahead_buffers",
			Help: "Read-ahead buffers (256 KiB) lent to encrypted downloads now."},
			stat(func(s storage.ReadAheadStats) float64 { return float64(s.Lent) })),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "carebridge_download_readahead_buffers_max",
			Help: "Read-ahead buffers the pool may lend at once (DOWNLOAD_READAHEAD_BYTES)."},
			stat(func(s storage.ReadAheadStats) float64 { return float64(s.Max) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "carebridge_download_readahead_short_total",
			Help: "Encrypted downloads that found fewer read-ahead buffers than they wanted (or none)."},
			stat(func(s storage.ReadAheadStats) float64 { return float64(s.Short) })),
	)
	return pool
}
