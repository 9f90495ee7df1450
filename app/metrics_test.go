package app

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/promtest"
)

type searchFunc func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error)

func (f searchFunc) Search(ctx context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error) {
	return f(ctx, r)
}

func TestCountCacheHits_CountsHitsAndMissesOfAnsweredSearches(t *testing.T) {
	reg := prometheus.NewRegistry()
	answers := []struct {
		res *ehr.SearchResult
		err error
	}{
		{&ehr.SearchResult{}, nil},
		{&ehr.SearchResult{CacheHit: true}, nil},
		{&ehr.SearchResult{CacheHit: true}, nil},
		{&ehr.SearchResult{Status: ehr.StatusError}, nil}, // every EHR failed: a miss still
		{nil, errors.New("rate limited")},                 // not a cache question
	}
	i := 0
	s := countCacheHits(searchFunc(func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		a := answers[i]
		i++
		return a.res, a.err
	}), newSearchCacheMetrics(reg))
	for range answers {
		_, _ = s.Search(context.Background(), ehr.SearchRequest{})
	}
	for result, want := range map[string]float64{"hit": 2, "miss": 2} {
		if got, ok := promtest.Value(t, reg, "carebridge_search_cache_requests_total", map[string]string{"result": result}); !ok || got != want {
			t.Errorf("result=%s: %v (present %v), want %v", result, got, ok, want)
		}
	}
}
