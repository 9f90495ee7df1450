package business

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestHours_ListsTheLocationsEntries(t *testing.T) {
	f := newFixture(t)
	hs, err := f.svc.Hours(as(ownerSub), ownLocID)
	noErr(t, err)
	if len(hs) != 1 || hs[0].ID != ownHoursID || hs[0].Day != time.Monday {
		t.Errorf("hours = %+v, want the Monday entry only", hs)
	}
}

func TestAddHours_AddsEveryEntryWithParsedDays(t *testing.T) {
	f := newFixture(t)
	in := []HoursInput{
		{Day: "tuesday", Start: "08:00", End: "17:00"},
		{Day: "WEDNESDAY", Start: "00:00", End: "23:59"},
		{Day: " Sunday ", Start: "10:00", End: "10:01"},
	}
	got, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
	noErr(t, err)

	adds := f.hours.AddCalls()
	if len(adds) != 1 || adds[0].LocationID != ownLocID {
		t.Fatalf("HoursRepo.Add calls = %+v, want one for location %d", adds, ownLocID)
	}
	want := []Hours{
		{Day: time.Tuesday, Start: "08:00", End: "17:00"},
		{Day: time.Wednesday, Start: "00:00", End: "23:59"},
		{Day: time.Sunday, Start: "10:00", End: "10:01"},
	}
	if len(adds[0].Hs) != len(want) {
		t.Fatalf("added %d entries, want %d", len(adds[0].Hs), len(want))
	}
	for i, h := range adds[0].Hs {
		if h.Day != want[i].Day || h.Start != want[i].Start || h.End != want[i].End {
			t.Errorf("entry %d = %+v, want %+v", i, h, want[i])
		}
	}
	if len(got) != 3 || got[0].ID == 0 || got[0].LocationID != ownLocID {
		t.Errorf("returned %+v, want the created entries", got)
	}
}

func TestAddHours_RejectsEmptyList(t *testing.T) {
	f := newFixture(t)
	for _, in := range [][]HoursInput{nil, {}} {
		_, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
		wantErr(t, err, ErrInvalid)
		wantMessage(t, err, "at least one")
	}
	if n := len(f.hours.AddCalls()); n != 0 {
		t.Errorf("HoursRepo.Add called %d times", n)
	}
}

func TestAddHours_RejectsMoreThanSevenEntries(t *testing.T) {
	f := newFixture(t)
	var in []HoursInput
	for _, d := range []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "Monday"} {
		in = append(in, HoursInput{Day: d, Start: "08:00", End: "09:00"})
	}
	_, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "at most 7")
	if n := len(f.hours.AddCalls()); n != 0 {
		t.Errorf("HoursRepo.Add called %d times", n)
	}
}

func TestAddHours_AcceptsAFullWeek(t *testing.T) {
	f := newFixture(t)
	delete(f.hrs, ownHoursID)
	var in []HoursInput
	for _, d := range []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"} {
		in = append(in, HoursInput{Day: d, Start: "08:00", End: "17:00"})
	}
	got, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
	noErr(t, err)
	if len(got) != 7 || len(f.hrs) != 8 {
		t.Errorf("added %d entries, %d stored; want 7 added next to the other location's one", len(got), len(f.hrs))
	}
}

func TestAddHours_ReportsInvalidEntriesByIndex(t *testing.T) {
	f := newFixture(t)
	in := []HoursInput{
		{Day: "Tuesday", Start: "17:00", End: "08:00"}, // end before start
		{Day: "Funday", Start: "08:00", End: "09:00"},  // bad day
		{Day: "Thursday", Start: "9:00", End: "24:00"}, // bad times
		{Day: "Friday", Start: "12:00", End: "12:00"},  // end equal to start
		{Day: "Saturday", Start: "08:00", End: "12:00"},
	}
	_, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err,
		"operatingHours[0].end_time must be after start_time",
		"operatingHours[1].day",
		"operatingHours[2].start_time must be HH:MM",
		"operatingHours[2].end_time must be HH:MM",
		"operatingHours[3].end_time must be after start_time",
	)
	var ce *core.Error
	_ = errors.As(err, &ce)
	if strings.Contains(ce.Message, "operatingHours[4]") {
		t.Errorf("message %q names the valid entry 4", ce.Message)
	}
	if n := len(f.hours.AddCalls()); n != 0 {
		t.Errorf("HoursRepo.Add called %d times", n)
	}
}

func TestAddHours_RejectsDayRepeatedInRequest(t *testing.T) {
	f := newFixture(t)
	in := []HoursInput{
		{Day: "Friday", Start: "08:00", End: "12:00"},
		{Day: "Saturday", Start: "08:00", End: "12:00"},
		{Day: "friday", Start: "13:00", End: "17:00"},
	}
	_, err := f.svc.AddHours(as(ownerSub), ownLocID, in)
	wantErr(t, err, ErrDuplicateDay)
	wantMessage(t, err, "Friday")
	if core.KindOf(err) != core.KindConflict {
		t.Errorf("kind = %v, want KindConflict", core.KindOf(err))
	}
	if n := len(f.hours.AddCalls()); n != 0 {
		t.Errorf("HoursRepo.Add called %d times", n)
	}
}

func TestAddHours_PassesThroughDayTheLocationAlreadyHas(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.AddHours(as(ownerSub), ownLocID, []HoursInput{
		{Day: "Tuesday", Start: "08:00", End: "12:00"},
		{Day: "Monday", Start: "08:00", End: "12:00"},
	})
	wantErr(t, err, ErrDuplicateDay)
	wantMessage(t, err, "Monday")
	if len(f.hours.AddCalls()) != 1 {
		t.Errorf("HoursRepo.Add called %d times, want 1 (the database decides)", len(f.hours.AddCalls()))
	}
	if len(f.hrs) != 2 {
		t.Errorf("%d entries stored, want the 2 seeded (all or nothing)", len(f.hrs))
	}
}

func TestUpdateHours_UpdatesOwnedEntry(t *testing.T) {
	f := newFixture(t)
	got, err := f.svc.UpdateHours(as(ownerSub), ownHoursID, HoursInput{Day: "wednesday", Start: "07:30", End: "15:45"})
	noErr(t, err)

	ups := f.hours.UpdateCalls()
	if len(ups) != 1 {
		t.Fatalf("HoursRepo.Update called %d times, want 1", len(ups))
	}
	want := Hours{ID: ownHoursID, LocationID: ownLocID, Day: time.Wednesday, Start: "07:30", End: "15:45"}
	if ups[0].H != want || got != want {
		t.Errorf("updated %+v, returned %+v; want %+v", ups[0].H, got, want)
	}
}

func TestUpdateHours_MissingEntryIsNotFoundNamingTheID(t *testing.T) {
	for _, id := range []int64{999, 0, -5} {
		t.Run(fmt.Sprint(id), func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.UpdateHours(as(ownerSub), id, HoursInput{Day: "Monday", Start: "08:00", End: "09:00"})
			wantErr(t, err, ErrHoursNotFound)
			wantMessage(t, err, fmt.Sprint(id))
			if n := len(f.hours.UpdateCalls()); n != 0 {
				t.Errorf("HoursRepo.Update called %d times", n)
			}
		})
	}
}

func TestUpdateHours_AnotherOwnersEntryIsNotFound(t *testing.T) {
	f := newFixture(t)
	before := f.hrs[otherHoursID]
	_, err := f.svc.UpdateHours(as(ownerSub), otherHoursID, HoursInput{Day: "Monday", Start: "08:00", End: "09:00"})
	wantErr(t, err, ErrHoursNotFound)
	wantMessage(t, err, fmt.Sprint(otherHoursID))
	if n := len(f.hours.UpdateCalls()); n != 0 {
		t.Errorf("HoursRepo.Update called %d times", n)
	}
	if f.hrs[otherHoursID] != before {
		t.Error("the other owner's entry changed")
	}
}

func TestUpdateHours_RejectsInvalidEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   HoursInput
		want []string
	}{
		{"bad day", HoursInput{Day: "Mon", Start: "08:00", End: "09:00"}, []string{"day must be a weekday"}},
		{"bad start", HoursInput{Day: "Monday", Start: "8:00", End: "09:00"}, []string{"start_time must be HH:MM"}},
		{"bad end", HoursInput{Day: "Monday", Start: "08:00", End: "24:00"}, []string{"end_time must be HH:MM"}},
		{"end before start", HoursInput{Day: "Monday", Start: "09:00", End: "08:59"}, []string{"end_time must be after start_time"}},
		{"all wrong", HoursInput{Day: "", Start: "ab:cd", End: "12:60"}, []string{"day", "start_time", "end_time"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.UpdateHours(as(ownerSub), ownHoursID, tc.in)
			wantErr(t, err, ErrInvalid)
			wantMessage(t, err, tc.want...)
			var ce *core.Error
			_ = errors.As(err, &ce)
			if strings.Contains(ce.Message, "operatingHours[") {
				t.Errorf("message %q names a list entry for a single update", ce.Message)
			}
			if n := len(f.hours.UpdateCalls()); n != 0 {
				t.Errorf("HoursRepo.Update called %d times", n)
			}
		})
	}
}

func TestUpdateHours_PassesThroughDayConflict(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.AddHours(as(ownerSub), ownLocID, []HoursInput{{Day: "Friday", Start: "08:00", End: "09:00"}})
	noErr(t, err)
	_, err = f.svc.UpdateHours(as(ownerSub), ownHoursID, HoursInput{Day: "Friday", Start: "10:00", End: "11:00"})
	wantErr(t, err, ErrDayConflict)
	if f.hrs[ownHoursID].Day != time.Monday {
		t.Error("the entry changed despite the conflict")
	}
}

// A failing location lookup is a server problem, not a missing entry: it
// must not turn into 404.
func TestUpdateHours_PassesThroughLocationLookupFailure(t *testing.T) {
	f := newFixture(t)
	f.locations.GetFunc = func(context.Context, int64) (Location, error) { return Location{}, errBoom }
	_, err := f.svc.UpdateHours(as(ownerSub), ownHoursID, HoursInput{Day: "Monday", Start: "08:00", End: "09:00"})
	wantErr(t, err, errBoom)
	if errors.Is(err, ErrHoursNotFound) {
		t.Errorf("err = %v, a lookup failure reported as not found", err)
	}
	if n := len(f.hours.UpdateCalls()); n != 0 {
		t.Errorf("HoursRepo.Update called %d times", n)
	}
}

func TestDeleteHours_DeletesOwnedEntry(t *testing.T) {
	f := newFixture(t)
	noErr(t, f.svc.DeleteHours(as(ownerSub), ownHoursID))
	if c := f.hours.DeleteCalls(); len(c) != 1 || c[0].ID != ownHoursID {
		t.Errorf("HoursRepo.Delete calls = %+v, want one for %d", c, ownHoursID)
	}
	if _, ok := f.hrs[ownHoursID]; ok {
		t.Error("entry still stored")
	}
}

func TestDeleteHours_MissingEntryIsNotFoundNamingTheID(t *testing.T) {
	f := newFixture(t)
	err := f.svc.DeleteHours(as(ownerSub), 4242)
	wantErr(t, err, ErrHoursNotFound)
	wantMessage(t, err, "4242")
	if n := len(f.hours.DeleteCalls()); n != 0 {
		t.Errorf("HoursRepo.Delete called %d times", n)
	}
}

func TestDeleteHours_AnotherOwnersEntryIsNotFound(t *testing.T) {
	f := newFixture(t)
	err := f.svc.DeleteHours(as(ownerSub), otherHoursID)
	wantErr(t, err, ErrHoursNotFound)
	wantMessage(t, err, fmt.Sprint(otherHoursID))
	if n := len(f.hours.DeleteCalls()); n != 0 {
		t.Errorf("HoursRepo.Delete called %d times", n)
	}
	if _, ok := f.hrs[otherHoursID]; !ok {
		t.Error("the other owner's entry was deleted")
	}
}

func TestDeleteHours_PassesThroughLocationLookupFailure(t *testing.T) {
	f := newFixture(t)
	f.locations.GetFunc = func(context.Context, int64) (Location, error) { return Location{}, errBoom }
	err := f.svc.DeleteHours(as(ownerSub), ownHoursID)
	wantErr(t, err, errBoom)
	if n := len(f.hours.DeleteCalls()); n != 0 {
		t.Errorf("HoursRepo.Delete called %d times", n)
	}
}
