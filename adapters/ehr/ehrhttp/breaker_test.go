package ehrhttp

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
)

func TestJudge_CountsOnlyTheEHRsFailures(t *testing.T) {
	answer := func(code int) *http.Response { return &http.Response{StatusCode: code} }
	fail := func(k failKind) error { return &failure{kind: k, err: errors.New("x")} }
	tests := []struct {
		name string
		resp *http.Response
		err  error
		want ehrclient.Verdict
	}{
		{"200", answer(200), nil, ehrclient.Success},
		{"304", answer(304), nil, ehrclient.Success},
		{"404", answer(404), nil, ehrclient.Success},
		{"401", answer(401), nil, ehrclient.Success},
		{"429", answer(429), nil, ehrclient.Failure},
		{"503", answer(503), nil, ehrclient.Failure},
		{"network", nil, fail(failNetwork), ehrclient.Failure},
		{"timeout", nil, fail(failTimeout), ehrclient.Failure},
		{"unknown error", nil, errors.New("?"), ehrclient.Failure},
		{"rate limiter", nil, fail(failLimited), ehrclient.Ignore},
		{"token", nil, fail(failAuth), ehrclient.Ignore},
		{"caller", nil, fail(failCaller), ehrclient.Ignore},
		{"body", nil, fail(failBody), ehrclient.Ignore},
	}
	for _, tt := range tests {
		if got := judge(tt.resp, tt.err); got != tt.want {
			t.Errorf("%s: judge = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestWithBreaker_RefusesOnceFailuresOpenIt(t *testing.T) {
	cb := ehrclient.NewBreaker(ehrclient.BreakerConfig{Name: "ehr-a", Failures: 2, Open: time.Hour})
	calls := 0
	d := withBreaker(cb)(func(context.Context, *http.Request) (*http.Response, error) {
		calls++
		return &http.Response{StatusCode: http.StatusBadGateway}, nil
	})
	for range 2 {
		if _, err := d(context.Background(), nil); err != nil {
			t.Fatalf("refused while closed: %v", err)
		}
	}
	if _, err := d(context.Background(), nil); err == nil || calls != 2 {
		t.Fatalf("after two 502s: err %v, calls %d; want circuit_open and no third call", err, calls)
	}
}
