package ehr

import (
	"context"
	"time"
)

// Time in EHR sync: whose clock may move what.
//
// The watermark is the EHR's time of the newest change taken in, and each
// poll asks for the changes after it (less the overlap). One change whose
// EHR time lies in the future (a record imported with a wrong date, a
// server whose clock jumped) would move it there, and every later change —
// older by that clock — would never be asked for again, silently. So the
// watermark never passes what the poll can vouch for: the bound of each
// batch is the EHR's own clock when it answered (ChangeBatch.Clock: an
// HTTP Date tells the second, so its second's end), and never more than
// this instance's clock plus SyncConfig.Skew (which alone bounds it when
// the EHR does not tell its clock: a WebSocket bot). A change past the
// bound is still classified and published; it is counted (PollResult.Ahead)
// and its time does not move the watermark. A watermark already past the
// bound (from before the bound held) is set back to it (PollResult.Rewound);
// the changes made between the odd time and that rewind are not read
// again, unless an operator moves the watermark back further.

// The defaults of the sync clock.
const (
	// defaultSyncSkew is SyncConfig.Skew's default: how far an EHR's clock
	// may run ahead of this instance's.
	defaultSyncSkew = time.Minute
	// dateResolution is how much an HTTP Date rounds its time down.
	dateResolution = time.Second
	// syncLeaseMargin is what a lease adds to the poll interval
	// (SyncLease).
	syncLeaseMargin = time.Minute
)

// SyncLease is the lease of a poller that polls every interval: the
// interval plus a minute. The holder renews it at each poll (each
// interval) and each batch; the minute covers a late tick and one batch's
// reading of the EHR. So an instance that dies holding the lease keeps the
// others off the system for at most the lease: its changes are published
// within two intervals and a minute.
func SyncLease(interval time.Duration) time.Duration {
	return max(interval, 0) + syncLeaseMargin
}

// bound is the time a batch answered at ehrClock (zero: not told) lets the
// watermark reach (see above).
func (s *Syncer) bound(ehrClock time.Time) time.Time {
	ours := s.cfg.Now().Add(s.cfg.Skew)
	if ehrClock.IsZero() {
		return ours
	}
	if theirs := ehrClock.Add(dateResolution); theirs.Before(ours) {
		return theirs
	}
	return ours
}

// newestWithin is the newest UpdatedAt of changes not past bound, at least
// from: the watermark a batch moves to.
func newestWithin(from time.Time, changes []AppointmentChange, bound time.Time) time.Time {
	for _, c := range changes {
		if at := c.Appointment.UpdatedAt; at.After(from) && !at.After(bound) {
			from = at
		}
	}
	return from
}

// ahead notes change c, of a new version, when its EHR time lies past
// bound.
func (b *batch) ahead(c AppointmentChange, bound time.Time) {
	at := c.Appointment.UpdatedAt
	if !at.After(bound) {
		return
	}
	b.aheadN++
	if at.After(b.aheadAt) {
		b.aheadAt = at
	}
}

// rewind sets a watermark found past bound back to it, in a transaction
// that commits only while this instance holds the lease, and notes it.
func (s *Syncer) rewind(ctx context.Context, cur SyncCursor, bound time.Time, res *PollResult) (SyncCursor, error) {
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		if err := r.Sync.Hold(ctx, s.cfg.System, s.cfg.Owner, s.cfg.Lease); err != nil {
			return err
		}
		return r.Sync.Rewind(ctx, s.cfg.System, bound)
	})
	if err != nil {
		return cur, wrapNonNil(err, "set back the watermark of %s", s.cfg.System)
	}
	res.Rewound = cur.Watermark
	cur.Watermark = bound
	res.Watermark = bound
	return cur, nil
}
