package demoehr

import (
	"reflect"
	"testing"
	"time"
)

func TestPeople_AreDeterministicDistinctAndOverlapByMRN(t *testing.T) {
	names := map[string]bool{}
	mrns := map[string]bool{}
	for i := range demoPeople {
		p := person(i)
		if !reflect.DeepEqual(p, person(i)) {
			t.Fatalf("person %d differs between two calls", i)
		}
		if names[p.Name.Text+p.BirthDate] || mrns[p.Identifiers[0].Value] {
			t.Fatalf("person %d repeats another: %+v", i, p)
		}
		names[p.Name.Text+p.BirthDate], mrns[p.Identifiers[0].Value] = true, true
		if b, err := time.Parse(time.DateOnly, p.BirthDate); err != nil || b.After(time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)) {
			t.Fatalf("person %d born %q", i, p.BirthDate)
		}
	}
	if both := fhirPeople - botFrom; demoPeople < 50 || both != 10 {
		t.Fatalf("%d people, %d in both EHRs", demoPeople, both)
	}
}

func TestFreeTime_CoversTheComingTwoWeeksInTheAgentsZone(t *testing.T) {
	now := time.Date(2026, 3, 6, 12, 0, 0, 0, time.UTC) // a Friday; DST starts on the 8th in the US
	free := freeTime("America/New_York", now)
	if len(free) != 12 { // 14 days less two Sundays
		t.Fatalf("%d open days", len(free))
	}
	for _, p := range free {
		if p.Start.Hour() != 9 || p.End.Hour() != 17 || p.Start.Location().String() != "America/New_York" || p.Start.Weekday() == time.Sunday {
			t.Fatalf("open %v–%v", p.Start, p.End)
		}
	}
	if !free[0].Start.After(now) || free[len(free)-1].Start.After(now.AddDate(0, 0, 15)) {
		t.Fatalf("span %v … %v", free[0].Start, free[len(free)-1].Start)
	}
	zones := map[string]bool{}
	for _, a := range practitioners {
		zones[a.Timezone] = true
	}
	if len(practitioners) != 3 || len(zones) != 2 {
		t.Fatalf("%d practitioners in %d zones", len(practitioners), len(zones))
	}
}
