package ehr

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Reconciliation is what one Syncer.Reconcile did.
type Reconciliation struct {
	// Held is false when another instance holds the lease: nothing was
	// done.
	Held bool
	// Listed counts the EHR's appointments in the window; Truncated tells
	// a listing cut at its bound.
	Listed    int
	Truncated bool
	// Checked counts the known appointments missing from the listing that
	// were asked for one by one; Cancelled, those the EHR no longer has.
	Checked, Cancelled int
}

// Reconcile catches the deletions no change feed shows: it lists the EHR's
// appointments starting in [from, to) (paging to the end, bounded) and
// compares them with the states remembered there that are not cancelled.
// A remembered one the listing lacks is asked for by id (at most
// MaxChecks a run: it may have moved out of the window, which the poller
// hears of); one the EHR no longer has is published as
// appointment.cancelled (origin ehr) and remembered cancelled, in one
// transaction that commits only while this instance holds the lease. No
// transaction is open while the EHR answers.
func (s *Syncer) Reconcile(ctx context.Context, from, to time.Time) (Reconciliation, error) {
	var res Reconciliation
	if s.sch == nil {
		return res, nil
	}
	_, held, err := s.store.Claim(ctx, s.cfg.System, s.cfg.Owner, s.cfg.Lease)
	if err != nil || !held {
		return res, wrapNonNil(err, "claim the sync lease of %s", s.cfg.System)
	}
	res.Held = true
	listed, err := s.listWindow(ctx, from, to, &res)
	if err != nil {
		return res, err
	}
	known, err := s.store.KnownBetween(ctx, s.cfg.System, from, to, reconcileKnown)
	if err != nil {
		return res, fmt.Errorf("read the known appointments of %s: %w", s.cfg.System, err)
	}
	gone, err := s.gone(ctx, known, listed, &res)
	if err != nil || len(gone) == 0 {
		return res, err
	}
	res.Cancelled, err = s.cancelGone(ctx, gone)
	return res, err
}

// listWindow returns the ids of the EHR's appointments starting in
// [from, to), at most reconcilePages pages of MaxLimit.
func (s *Syncer) listWindow(ctx context.Context, from, to time.Time, res *Reconciliation) (map[string]bool, error) {
	ids := map[string]bool{}
	for page := 1; page <= reconcilePages; page++ {
		p, err := s.sch.ListAppointments(ctx, AppointmentFilter{From: from, To: to, Page: page, Limit: MaxLimit})
		if err != nil {
			return nil, fmt.Errorf("list the appointments of %s: %w", s.cfg.System, err)
		}
		for _, a := range p.Items {
			ids[a.ID] = true
		}
		res.Listed += len(p.Items)
		if len(p.Items) < MaxLimit || page*MaxLimit >= p.TotalCount {
			return ids, nil
		}
	}
	res.Truncated = true
	return ids, nil
}

// gone returns those of known (not cancelled) that listed lacks and the EHR
// answers not found for, asking at most MaxChecks.
func (s *Syncer) gone(ctx context.Context, known []AppointmentState, listed map[string]bool, res *Reconciliation) ([]AppointmentState, error) {
	var out []AppointmentState
	for _, k := range known {
		if listed[k.ID] || k.Status == StatusCancelled {
			continue
		}
		if res.Checked == s.cfg.MaxChecks {
			break
		}
		res.Checked++
		_, err := s.sch.GetAppointment(ctx, k.ID)
		switch {
		case errors.Is(err, ErrAppointmentNotFound):
			out = append(out, k)
		case err != nil:
			return nil, fmt.Errorf("look up an appointment of %s: %w", s.cfg.System, err)
		}
	}
	return out, nil
}

// cancelGone publishes the deletion of gone and remembers them cancelled,
// skipping any whose state changed since it was read; it returns how many
// it published.
func (s *Syncer) cancelGone(ctx context.Context, gone []AppointmentState) (int, error) {
	ids := make([]string, len(gone))
	for i, g := range gone {
		ids[i] = g.ID
	}
	var n int
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		n = 0
		if err := r.Sync.Hold(ctx, s.cfg.System, s.cfg.Owner, s.cfg.Lease); err != nil {
			return err
		}
		now, err := r.Sync.Known(ctx, s.cfg.System, ids)
		if err != nil {
			return err
		}
		for _, g := range gone {
			k, ok := now[g.ID]
			if !ok || k.Status == StatusCancelled || k.Version != g.Version {
				continue // changed meanwhile: the poller saw it
			}
			k.Status, k.Version = StatusCancelled, ""
			e := core.AppointmentEvent(core.AppointmentCancelled, core.OriginEHR, k.ID, k.AgentID, string(k.Status), k.Start, k.End, k.Business)
			if err := r.Outbox.Emit(ctx, e); err != nil {
				return err
			}
			if err := r.Sync.Remember(ctx, s.cfg.System, k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cancel the deleted appointments of %s: %w", s.cfg.System, err)
	}
	return n, nil
}
