package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

// One agent's calendar is its EHR system's: two businesses whose
// integration EHR is the same system hold the agent's time once between
// them, also when they take it at the same instant.
func TestIntegrationHolds_OneAgentsTimeIsHeldOncePerEHRSystem(t *testing.T) {
	ctx := context.Background()
	holds := pgtest.Store(t).Holds()
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	h := func(business, system, agent string, from time.Time) ehr.Hold {
		return ehr.Hold{ID: core.NewUUID(), Kind: ehr.HoldBook, AgentID: agent, Start: from, End: from.Add(30 * time.Minute),
			Subject: "pat-" + business, Business: business, System: system}
	}
	if err := holds.Take(ctx, h(a, "shared", "dr-1", at(9, 0)), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := holds.Take(ctx, h(b, "shared", "dr-1", at(9, 15)), time.Minute); !errors.Is(err, ehr.ErrAgentBusy) {
		t.Fatalf("another business, the same system and agent, overlapping: %v, want ErrAgentBusy", err)
	}
	if err := holds.Take(ctx, h(b, "other", "dr-1", at(9, 15)), time.Minute); err != nil {
		t.Fatalf("the same agent id in another system: %v", err)
	}
	// At the same instant, from two businesses: one wins.
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		biz := a
		if i%2 == 1 {
			biz = b
		}
		wg.Go(func() { errs[i] = holds.Take(ctx, h(biz, "shared", "dr-2", at(10, 0)), time.Minute) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ehr.ErrAgentBusy):
			t.Fatalf("take: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent holds of one agent's time taken; want 1", won)
	}
}

// Holds, bookings and their changes keep their business and their system:
// one agent or appointment id in two systems is two.
func TestIntegrationHolds_AndBookingsArePerBusinessAndSystem(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	holds, bookings := db.Holds(), db.Bookings()
	const a, b = "aaaaaaaa-0000-0000-0000-000000000001", "bbbbbbbb-0000-0000-0000-000000000002"
	future := time.Now().Add(48 * time.Hour)
	h := func(business, agent string) ehr.Hold {
		return ehr.Hold{ID: core.NewUUID(), Kind: ehr.HoldBook, AgentID: agent, Start: future, End: future.Add(30 * time.Minute),
			Subject: "pat", Business: business, System: "ehr-" + business, MaxFuture: 1}
	}
	// One agent id at one time in two EHRs: no overlap.
	ha := h(a, "dr-1")
	if err := holds.Take(ctx, ha, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := holds.Take(ctx, h(b, "dr-1"), time.Minute); err != nil {
		t.Fatalf("the same agent id in another business's EHR: %v", err)
	}
	if err := holds.Take(ctx, h(a, "dr-2"), time.Minute); !errors.Is(err, ehr.ErrAppointmentLimit) {
		t.Fatalf("a second future appointment at a with MaxFuture 1: %v", err)
	}
	// The hold keeps its business and system for the reconciler.
	if err := holds.Unknown(ctx, ha.ID, 0); err != nil {
		t.Fatal(err)
	}
	due, err := holds.Due(ctx, 10, time.Minute)
	if err != nil || len(due) != 1 || due[0].ID != ha.ID || due[0].Business != a || due[0].System != "ehr-"+a {
		t.Fatalf("due %+v %v; want a's hold with its business and system", due, err)
	}
	for _, bk := range []ehr.Booking{{Subject: "pat", Business: a, System: "ehr-a", AppointmentID: "apt-1", Start: future},
		{Subject: "pat", Business: b, System: "ehr-b", AppointmentID: "apt-1", Start: future},
		{Subject: "pat", Business: a, System: "ehr-z", AppointmentID: "apt-1", Start: future}} { // a's new EHR, the same id
		if recorded, err := bookings.Record(ctx, bk); err != nil || !recorded {
			t.Fatalf("record %+v: %v %v", bk, recorded, err)
		}
	}
	for _, tc := range []struct {
		business string
		want     []ehr.OwnBooking
		newest   string
	}{{a, []ehr.OwnBooking{{System: "ehr-a", AppointmentID: "apt-1"}, {System: "ehr-z", AppointmentID: "apt-1"}}, "ehr-z"},
		{b, []ehr.OwnBooking{{System: "ehr-b", AppointmentID: "apt-1"}}, "ehr-b"}, {"", nil, ""}} {
		got, err := bookings.BookedBy(ctx, "pat", tc.business)
		if err != nil || len(got) != len(tc.want) || len(got) > 0 && (got[0] != tc.want[0] || got[len(got)-1] != tc.want[len(got)-1]) {
			t.Errorf("bookings of pat at %q: %+v %v; want %+v", tc.business, got, err, tc.want)
		}
		if system, ok, err := bookings.IsBookedBy(ctx, "pat", tc.business, "apt-1"); err != nil || ok != (tc.newest != "") || system != tc.newest {
			t.Errorf("IsBookedBy at %q: %q %v %v; want %q", tc.business, system, ok, err, tc.newest)
		}
	}
	// Cancelling ehr-a's apt-1 leaves ehr-z's and b's counted.
	if err := bookings.Changed(ctx, "ehr-a", a, "apt-1", future, true); err != nil {
		t.Fatal(err)
	}
	got, _ := bookings.BookedBy(ctx, "pat", a)
	if len(got) != 2 || !got[0].Cancelled || got[1].Cancelled {
		t.Fatalf("after cancelling ehr-a's: %+v", got)
	}
	if err := holds.Take(ctx, h(b, "dr-3"), time.Minute); !errors.Is(err, ehr.ErrAppointmentLimit) {
		t.Fatalf("b's booking must still count after a's was cancelled: %v", err)
	}
}
