package business

import (
	"context"
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core"
)

func TestChanges_EmitTheirEventInTheirTransaction(t *testing.T) {
	f := newFixture(t)
	ctx := as(ownerSub)
	if _, err := f.svc.EditBusiness(ctx, ownBizID, BusinessEdit{City: ptr("Evanston")}); err != nil {
		t.Fatal(err)
	}
	l, err := f.svc.CreateLocation(ctx, ownBizID, completeInput(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.UpdateLocation(ctx, l.ID, LocationInput{Name: ptr("Uptown")}, nil); err != nil {
		t.Fatal(err)
	}
	added, err := f.svc.AddHours(ctx, l.ID, []HoursInput{{Day: "Wednesday", Start: "09:00", End: "12:00"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.UpdateHours(ctx, added[0].ID, HoursInput{Day: "Thursday", Start: "09:00", End: "12:00"}); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteHours(ctx, added[0].ID); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		typ  core.EventType
		data any
	}{
		{core.BusinessUpdated, core.BusinessData{BusinessID: ownBizID}},
		{core.LocationCreated, core.LocationData{LocationID: l.ID}},
		{core.LocationUpdated, core.LocationData{LocationID: l.ID}},
		{core.OperatingHoursChanged, core.LocationData{LocationID: l.ID}},
		{core.OperatingHoursChanged, core.LocationData{LocationID: l.ID}},
		{core.OperatingHoursChanged, core.LocationData{LocationID: l.ID}},
	}
	if len(f.events) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(f.events), len(want), f.events)
	}
	for i, w := range want {
		if e := f.events[i]; e.Type != w.typ || e.Data != w.data || e.BusinessID != ownBizID {
			t.Errorf("event %d = %+v, want %s %+v of %s", i, e, w.typ, w.data, ownBizID)
		}
	}
}

func TestChanges_AFailedChangeEmitsNothing(t *testing.T) {
	f := newFixture(t)
	f.hours.DeleteFunc = func(context.Context, int64) error { return errBoom }
	if err := f.svc.DeleteHours(as(ownerSub), ownHoursID); !errors.Is(err, errBoom) {
		t.Fatalf("DeleteHours: %v", err)
	}
	if _, err := f.svc.EditBusiness(as(staffSub), ownBizID, BusinessEdit{City: ptr("X")}); err == nil {
		t.Fatal("a staff member changed the business")
	}
	if len(f.events) != 0 {
		t.Fatalf("events of failed changes: %+v", f.events)
	}
}
