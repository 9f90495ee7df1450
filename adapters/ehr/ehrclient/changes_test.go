package ehrclient_test

import (
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core/ehr"
)

// changesAt is one change per offset (seconds after a base instant), ids
// a0, a1, … in order.
func changesAt(secs ...int) []ehr.AppointmentChange {
	base := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	out := make([]ehr.AppointmentChange, len(secs))
	for i, s := range secs {
		out[i] = ehr.AppointmentChange{Appointment: ehr.Appointment{ID: "a" + string(rune('0'+i)),
			UpdatedAt: base.Add(time.Duration(s) * time.Second)}, Version: "1"}
	}
	return out
}

func ids(cs []ehr.AppointmentChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Appointment.ID)
	}
	return out
}

func TestCutChanges_NeverCutsBetweenChangesOfOneInstant(t *testing.T) {
	tests := []struct {
		name     string
		secs     []int
		n        int
		want     []string
		wantMore bool
	}{
		{"fewer than n", []int{1, 2}, 3, []string{"a0", "a1"}, false},
		{"exactly n", []int{1, 2, 3}, 3, []string{"a0", "a1", "a2"}, false},
		{"more than n", []int{1, 2, 3, 4}, 2, []string{"a0", "a1"}, true},
		{"a tie across the cut moves it back", []int{1, 2, 2, 3}, 2, []string{"a0"}, true},
		{"a tie from the first moves it forward", []int{1, 1, 1, 2}, 2, []string{"a0", "a1", "a2"}, true},
		{"all of one instant", []int{1, 1, 1}, 2, []string{"a0", "a1", "a2"}, false},
		{"a tie ending at the cut", []int{1, 2, 2, 3}, 3, []string{"a0", "a1", "a2"}, true},
		{"n below 1 is 1", []int{1, 2}, 0, []string{"a0"}, true},
		{"none", nil, 5, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, more := ehrclient.CutChanges(changesAt(tt.secs...), tt.n)
			if !slices.Equal(ids(got), tt.want) || more != tt.wantMore {
				t.Errorf("CutChanges(%v, %d) = %v, more %v; want %v, more %v", tt.secs, tt.n, ids(got), more, tt.want, tt.wantMore)
			}
		})
	}
}

func TestSortChanges_OldestFirstThenByID(t *testing.T) {
	cs := changesAt(3, 1, 2, 1)
	// ids a0 (3s), a1 (1s), a2 (2s), a3 (1s), in another zone for one
	cs[2].Appointment.UpdatedAt = cs[2].Appointment.UpdatedAt.In(time.FixedZone("", -5*3600))
	ehrclient.SortChanges(cs)
	if got, want := ids(cs), []string{"a1", "a3", "a2", "a0"}; !slices.Equal(got, want) {
		t.Errorf("sorted = %v; want %v", got, want)
	}
}
