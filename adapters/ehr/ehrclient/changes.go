package ehrclient

import (
	"cmp"
	"slices"

	"github.com/carebridge/carebridge/core/ehr"
)

// The change feeds' shared rules (ehr.ChangeFeed): the FHIR scheduler and
// the bot read an EHR's appointment changes, order them and hand them out
// in bounded batches the same way.

// SortChanges orders cs oldest first by Appointment.UpdatedAt (as
// instants), then by the appointment's id, then by version, so that one
// read always comes in one order.
func SortChanges(cs []ehr.AppointmentChange) {
	slices.SortStableFunc(cs, func(a, b ehr.AppointmentChange) int {
		return cmp.Or(a.Appointment.UpdatedAt.Compare(b.Appointment.UpdatedAt),
			cmp.Compare(a.Appointment.ID, b.Appointment.ID), cmp.Compare(a.Version, b.Version))
	})
}

// CutChanges returns the first n of cs (sorted by SortChanges, and
// holding every change of the EHR up to its last one's instant) and
// whether it left some out. The caller asks again from the last one's
// UpdatedAt, for the changes after it, so the cut never falls between
// two changes of one instant — those after the cut would never be read:
// the cut moves back to before that instant, or, when all of the first
// n share it, forward past it (the batch is then larger than n, the
// only case it is). n below 1 counts as 1.
func CutChanges(cs []ehr.AppointmentChange, n int) ([]ehr.AppointmentChange, bool) {
	n = max(n, 1)
	if len(cs) <= n {
		return cs, false
	}
	at := cs[n-1].Appointment.UpdatedAt
	if !cs[n].Appointment.UpdatedAt.Equal(at) {
		return cs[:n], true
	}
	first := n - 1
	for first > 0 && cs[first-1].Appointment.UpdatedAt.Equal(at) {
		first--
	}
	if first > 0 {
		return cs[:first], true
	}
	end := n
	for end < len(cs) && cs[end].Appointment.UpdatedAt.Equal(at) {
		end++
	}
	return cs[:end], end < len(cs)
}
