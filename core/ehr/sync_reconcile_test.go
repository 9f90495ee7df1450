package ehr

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Reconcile (sync_reconcile.go): the deletions no change feed shows.

// listing is a Scheduler whose window listing pages over appts and whose
// lookup finds only those of ids in exist.
func listing(appts []Appointment, exist map[string]bool) *SchedulerMock {
	return &SchedulerMock{
		ListAppointmentsFunc: func(_ context.Context, f AppointmentFilter) (Page[Appointment], error) {
			lo := min((f.Page-1)*f.Limit, len(appts))
			hi := min(lo+f.Limit, len(appts))
			return Page[Appointment]{Items: appts[lo:hi], TotalCount: len(appts), Page: f.Page, Limit: f.Limit}, nil
		},
		GetAppointmentFunc: func(_ context.Context, id string) (Appointment, error) {
			if exist[id] {
				return Appointment{ID: id}, nil
			}
			return Appointment{}, ErrAppointmentNotFound
		},
	}
}

func TestSyncerReconcile_PublishesWhatTheEHRDeleted(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	var inEHR []Appointment
	for i := range 150 { // two pages
		a := syncAppt(fmt.Sprint("kept-", i), StatusBooked, 9)
		inEHR = append(inEHR, a)
	}
	remember := func(id string, st AppointmentStatus) {
		a := syncAppt(id, st, 12)
		_ = r.store.remember(context.Background(), "clinic-a", AppointmentState{ID: id, AgentID: a.AgentID, Version: "1",
			Status: st, Start: a.Start, End: a.End, Business: "biz-1"})
	}
	remember("kept-149", StatusBooked)   // on the second page
	remember("deleted", StatusCheckedIn) // gone from the EHR
	remember("moved-away", StatusBooked) // out of the window: the poller's
	remember("was-cancelled", StatusCancelled)
	sch := listing(inEHR, map[string]bool{"moved-away": true})
	r.s.sch = sch
	from, to := time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	res, err := r.s.Reconcile(context.Background(), from, to)
	if err != nil || res.Listed != 150 || res.Checked != 2 || res.Cancelled != 1 || res.Truncated {
		t.Fatalf("reconcile %+v, %v", res, err)
	}
	if got := r.published(); !slices.Equal(got, []string{`appointment.cancelled deleted cancelled ehr "biz-1"`}) {
		t.Fatalf("published %q", got)
	}
	if s, _ := r.store.state("clinic-a", "deleted"); s.Status != StatusCancelled {
		t.Fatalf("state %+v", s)
	}
	if res, err := r.s.Reconcile(context.Background(), from, to); err != nil || res.Cancelled != 0 || len(r.published()) != 1 {
		t.Fatalf("second reconcile %+v, %v", res, err)
	}
}

func TestSyncerReconcile_LeaseLostOrEHRDownWritesNothing(t *testing.T) {
	r := newSyncRig(SyncConfig{})
	a := syncAppt("deleted", StatusBooked, 12)
	_ = r.store.remember(context.Background(), "clinic-a", AppointmentState{ID: a.ID, AgentID: "dr-1", Status: StatusBooked, Start: a.Start, End: a.End})
	from, to := time.Date(2030, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2030, 3, 6, 0, 0, 0, 0, time.UTC)
	sch := listing(nil, nil)
	r.s.sch = sch
	down := &core.Error{Kind: core.KindBadGateway, Code: "ehr_error", Message: "down"}
	sch.ListAppointmentsFunc = func(context.Context, AppointmentFilter) (Page[Appointment], error) { return Page[Appointment]{}, down }
	if _, err := r.s.Reconcile(context.Background(), from, to); !errors.Is(err, down) {
		t.Fatalf("reconcile with the EHR down: %v", err)
	}
	sch = listing(nil, nil)
	sch.GetAppointmentFunc = func(ctx context.Context, id string) (Appointment, error) {
		r.store.now = r.store.now.Add(3 * time.Minute)
		_, _, _ = r.store.claim(ctx, "clinic-a", "instance-2", time.Minute)
		return Appointment{}, ErrAppointmentNotFound
	}
	r.s.sch = sch
	if _, err := r.s.Reconcile(context.Background(), from, to); !errors.Is(err, ErrSyncLeaseLost) {
		t.Fatalf("reconcile after losing the lease: %v", err)
	}
	if s, _ := r.store.state("clinic-a", "deleted"); s.Status != StatusBooked || len(r.published()) != 0 {
		t.Fatalf("a reconciler without its lease wrote: %+v, %q", s, r.published())
	}
}
