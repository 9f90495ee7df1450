package ehrclient_test

import (
	"errors"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core"
)

type states []int

func (s *states) BreakerState(v int) { *s = append(*s, v) }

func TestBreaker_OnlyFailuresInARowOpenIt(t *testing.T) {
	var got states
	b := ehrclient.NewBreaker(ehrclient.BreakerConfig{Name: "ehr-a", Failures: 2, Open: time.Hour, Metrics: &got})
	for _, v := range []ehrclient.Verdict{ehrclient.Failure, ehrclient.Success, ehrclient.Failure,
		ehrclient.Ignore, ehrclient.Ignore} {
		done, err := b.Allow()
		if err != nil {
			t.Fatalf("refused before two failures in a row: %v", err)
		}
		done(v)
	}
	if b.IsOpen() {
		t.Fatal("open after failure, success, failure and two ignored calls")
	}
	done, _ := b.Allow()
	done(ehrclient.Failure)
	if !b.IsOpen() {
		t.Fatal("closed after two failures in a row (ignored calls between them)")
	}
	_, err := b.Allow()
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Kind != core.KindUnavailable || ce.Code != "circuit_open" ||
		ce.Message != "ehr-a is temporarily unavailable after repeated failures" {
		t.Fatalf("Allow while open = %v, want circuit_open naming the system", err)
	}
	if want := (states{ehrclient.Closed, ehrclient.Open}); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("metrics told %v, want %v", got, want)
	}
}

func TestDurationMS_IsMillisecondsWithMicrosecondPrecision(t *testing.T) {
	a := ehrclient.DurationMS(1500*time.Microsecond + 700*time.Nanosecond)
	if a.Key != "duration_ms" || a.Value.Float64() != 1.5 {
		t.Errorf("DurationMS = %v, want duration_ms=1.5", a)
	}
}
