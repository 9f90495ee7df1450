package ehrtest

import (
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestSameCoverage_ComparesTimeNotHowItIsCut(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2030, 5, 6, h, m, 0, 0, time.UTC) }
	p := func(h1, m1, h2, m2 int) ehr.Period { return ehr.Period{Start: at(h1, m1), End: at(h2, m2)} }
	for _, c := range []struct {
		name string
		a, b []ehr.Period
		same bool
	}{
		{"split where it touches", []ehr.Period{p(9, 0, 10, 0), p(10, 0, 12, 0)}, []ehr.Period{p(9, 0, 12, 0)}, true},
		{"overlapping, out of order", []ehr.Period{p(10, 0, 12, 0), p(9, 0, 11, 0)}, []ehr.Period{p(9, 0, 12, 0)}, true},
		{"a gap of half an hour", []ehr.Period{p(9, 0, 10, 0), p(10, 30, 12, 0)}, []ehr.Period{p(9, 0, 12, 0)}, false},
		{"one minute longer", []ehr.Period{p(9, 0, 12, 1)}, []ehr.Period{p(9, 0, 12, 0)}, false},
		{"nothing against something", nil, []ehr.Period{p(9, 0, 9, 5)}, false},
		{"nothing, and an empty period", []ehr.Period{p(9, 0, 9, 0)}, nil, true},
	} {
		if got := sameCoverage(c.a, c.b); got != c.same || sameCoverage(c.b, c.a) != c.same {
			t.Errorf("%s: sameCoverage = %v, want %v", c.name, got, c.same)
		}
	}
}
