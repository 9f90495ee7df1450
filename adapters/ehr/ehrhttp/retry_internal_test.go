package ehrhttp

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter_ParsesSecondsAndDates(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header string
		want   time.Duration
		ok     bool
	}{
		{"", 0, false},
		{"abc", 0, false},
		{"-1", 0, false},
		{"0", 0, true},
		{" 7 ", 7 * time.Second, true},
		{"12", 12 * time.Second, true},
		{"99999999999", 24 * time.Hour, true},
		{now.Add(4 * time.Second).Format(http.TimeFormat), 4 * time.Second, true},
		{now.Add(30 * time.Second).Format(time.RFC850), 30 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{now.Add(48 * time.Hour).Format(http.TimeFormat), 24 * time.Hour, true},
	}
	for _, tt := range tests {
		got, ok := RetryAfter(tt.header, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("RetryAfter(%q) = %v, %v; want %v, %v", tt.header, got, ok, tt.want, tt.ok)
		}
	}
}

func TestFullJitter_StaysWithinTheExponentialCeiling(t *testing.T) {
	base, ceiling := 100*time.Millisecond, 2*time.Second
	next := fullJitter(base, ceiling)
	for n, ceil := range []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, 1600 * time.Millisecond, 2 * time.Second, 2 * time.Second} {
		var top time.Duration
		for range 200 {
			d := next(n)
			if d < 0 || d > ceil {
				t.Fatalf("retry %d waited %v, want within [0, %v]", n, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/2 {
			t.Errorf("retry %d: largest of 200 waits %v, not spread up to %v", n, top, ceil)
		}
	}
	if d := fullJitter(time.Hour, 2*time.Hour)(100); d < 0 || d > 2*time.Hour {
		t.Errorf("large retry number waited %v", d)
	}
}
