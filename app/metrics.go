package app

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/ports"
)

// searchCacheMetrics counts searches answered from the search cache and
// the others: carebridge_search_cache_requests_total{result="hit|miss"}.
type searchCacheMetrics struct{ hits, misses prometheus.Counter }

func newSearchCacheMetrics(reg prometheus.Registerer) searchCacheMetrics {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "carebridge_search_cache_requests_total",
		Help: "Patient searches answered from the search cache (hit) or from the EHR systems (miss).",
	}, []string{"result"})
	reg.MustRegister(v)
	return searchCacheMetrics{hits: v.WithLabelValues("hit"), misses: v.WithLabelValues("miss")}
}

// countCacheHits decorates the search port. The core keeps its answers at
// two levels, decoded in process and encoded in the ehr.Cache port (memory
// or Redis); SearchResult.CacheHit is true when either answered, so the
// result, not the Cache port (whose Get a process-level hit never reaches,
// and which also holds the rate-limit counters), is what is counted. A
// search that failed (invalid, refused, rate limited) is neither.
func countCacheHits(next ports.Search, m searchCacheMetrics) ports.Search {
	return countedSearch{next: next, m: m}
}

type countedSearch struct {
	next ports.Search
	m    searchCacheMetrics
}

func (s countedSearch) Search(ctx context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error) {
	res, err := s.next.Search(ctx, r)
	if err == nil && res != nil {
		if res.CacheHit {
			s.m.hits.Inc()
		} else {
			s.m.misses.Inc()
		}
	}
	return res, err
}
