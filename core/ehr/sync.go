package ehr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The defaults of SyncConfig.
const (
	defaultSyncOverlap    = 2 * time.Minute
	defaultSyncBatch      = 500
	defaultSyncMaxBatches = 20
	defaultSyncChecks     = 100
	// reconcilePages bounds the pages of one reconciliation's listing
	// (MaxLimit each).
	reconcilePages = 100
	// reconcileKnown bounds the known states one reconciliation compares.
	reconcileKnown = reconcilePages * MaxLimit
)

// SyncConfig tunes the Syncer of one integration EHR system.
type SyncConfig struct {
	// System is the EHR system's name (the key of its cursor and states;
	// Appointment.Source of its appointments).
	System string
	// Owner names this instance in the lease ("": a fresh id).
	Owner string
	// Businesses are the businesses the system is the integration EHR of
	// ("" stands for none: a single-practice deployment): when it holds
	// exactly one, events of appointments no booking names belong to it.
	// Which bookings are the system's the booking log tells (each records
	// its system), whatever businesses the system serves now.
	Businesses []string
	// Overlap is how far before the watermark each poll asks again (0:
	// 2 min), so an EHR clock running behind or a change committed late
	// is not lost; what it asks again is deduplicated by version.
	Overlap time.Duration
	// Batch is how many changes one transaction takes in (0: 500), and
	// MaxBatches how many batches one PollOnce takes at most (0: 20): a
	// backlog is drained over several polls.
	Batch, MaxBatches int
	// Interval is how often the system is polled; the lease follows it.
	Interval time.Duration
	// Lease is how long a claim of the system's poller lasts (0:
	// SyncLease(Interval)); each poll and each batch renews it.
	Lease time.Duration
	// History publishes the changes the first sweep finds. By default the
	// first sweep (no watermark yet, from the EHR's first change) is a
	// baseline: it remembers every appointment and publishes nothing, so
	// turning sync on does not replay a practice's history as events.
	History bool
	// MaxChecks bounds the appointments one Reconcile asks the EHR about
	// one by one (0: 100).
	MaxChecks int
	// Now is this instance's clock (nil: time.Now), and Skew how far an
	// EHR's clock may run ahead of it (0: 1 min). The watermark never
	// passes the bound of a poll: the EHR's clock when it answered
	// (ChangeBatch.Clock, to its second) and never past Now plus Skew; Now
	// plus Skew alone when the EHR does not tell its clock (see bound).
	Now  func() time.Time
	Skew time.Duration
}

// Syncer hears the appointment changes made in one integration EHR itself
// (its own screens, not the API) and publishes them as events with origin
// ehr. Every instance may run one per system: a lease in the SyncStore lets
// one poll at a time, and a transaction commits only while its instance
// still holds the lease, so a change is published exactly once.
type Syncer struct {
	feed  ChangeFeed
	sch   Scheduler
	store SyncStore
	tx    Transactor
	cfg   SyncConfig
}

// NewSyncer returns the Syncer of cfg.System, reading its changes from feed
// and (for Reconcile; nil: none) its appointments from sch, its cursor and
// lease from store, and writing states and events through tx.
func NewSyncer(feed ChangeFeed, sch Scheduler, store SyncStore, tx Transactor, cfg SyncConfig) *Syncer {
	cfg.Owner = cmp.Or(cfg.Owner, core.NewUUID())
	cfg.Overlap = cmp.Or(cfg.Overlap, defaultSyncOverlap)
	cfg.Batch = cmp.Or(cfg.Batch, defaultSyncBatch)
	cfg.MaxBatches = cmp.Or(cfg.MaxBatches, defaultSyncMaxBatches)
	cfg.Lease = cmp.Or(cfg.Lease, SyncLease(cfg.Interval))
	cfg.MaxChecks = cmp.Or(cfg.MaxChecks, defaultSyncChecks)
	cfg.Skew = cmp.Or(cfg.Skew, defaultSyncSkew)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Syncer{feed: feed, sch: sch, store: store, tx: tx, cfg: cfg}
}

// PollResult is what one PollOnce did.
type PollResult struct {
	// Held is false when another instance holds the lease: nothing was
	// done.
	Held bool
	// Baseline tells a poll of the first sweep, which publishes nothing.
	Baseline bool
	Batches  int
	// Changes counts the changes read, Skipped those unusable (no id,
	// agent, time or status), Unchanged those of a version already known.
	Changes, Skipped, Unchanged int
	// Events counts the events published, by type.
	Events map[core.EventType]int
	// Watermark is the cursor's watermark after the poll (the EHR's time).
	Watermark time.Time
	// More tells a backlog left for the next poll.
	More bool
	// Bound is the last batch's bound: the watermark does not pass it.
	Bound time.Time
	// Ahead counts the changes taken in (new versions) whose EHR time lay
	// past their batch's bound — an EHR clock or record gone wrong: they
	// are published, but the watermark does not follow them; AheadAt is
	// the latest such time.
	Ahead   int
	AheadAt time.Time
	// Rewound is a watermark found past the bound (moved there before the
	// bound held) and set back to the bound; zero when none.
	Rewound time.Time
}

// PollOnce claims the system's lease and takes in its changes since the
// watermark less the overlap, in bounded batches, each its own transaction
// with its events, its states and the watermark's advance. An EHR failure
// is returned and leaves the watermark where the last batch put it (the
// next poll goes on from there); ErrChangesNotSupported is returned as
// is. A lease lost meanwhile is ErrSyncLeaseLost: that batch wrote
// nothing.
func (s *Syncer) PollOnce(ctx context.Context) (PollResult, error) {
	res := PollResult{Events: map[core.EventType]int{}}
	cur, held, err := s.store.Claim(ctx, s.cfg.System, s.cfg.Owner, s.cfg.Lease)
	if err != nil || !held {
		return res, wrapNonNil(err, "claim the sync lease of %s", s.cfg.System)
	}
	res.Held, res.Watermark = true, cur.Watermark
	err = s.poll(ctx, cur, &res)
	if perr := s.store.Polled(context.WithoutCancel(ctx), s.cfg.System, s.cfg.Owner, failureCode(err)); perr != nil && err == nil {
		err = fmt.Errorf("note the poll of %s: %w", s.cfg.System, perr)
	}
	return res, err
}

// poll reads and takes in the batches of one PollOnce.
func (s *Syncer) poll(ctx context.Context, cur SyncCursor, res *PollResult) error {
	res.Baseline = !cur.Baselined && !s.cfg.History
	since, max := s.from(cur), s.cfg.Batch
	// Only batches that move the watermark count against MaxBatches: those
	// that read the overlap again (or only changes past the bound) do not,
	// so a poll always gets past it (up to a hard bound of maxReread times
	// as many batches).
	for forward, n := 0, 0; forward < s.cfg.MaxBatches && n < maxReread*s.cfg.MaxBatches; n++ {
		b, err := s.feed.AppointmentChanges(ctx, since, max)
		if errors.Is(err, ErrChangesNotSupported) {
			return err
		}
		if err != nil {
			return fmt.Errorf("read the appointment changes of %s: %w", s.cfg.System, err)
		}
		bound := s.bound(b.Clock)
		res.Bound = bound
		if cur.Watermark.After(bound) {
			if cur, err = s.rewind(ctx, cur, bound, res); err != nil {
				return err
			}
			since, max = s.from(cur), s.cfg.Batch
			continue
		}
		before := cur.Watermark
		if cur, err = s.takeIn(ctx, cur, b.Changes, bound, !b.More, res); err != nil {
			return err
		}
		if cur.Watermark.After(before) {
			forward++
		}
		res.Batches++
		res.Watermark, res.More = cur.Watermark, b.More
		if !b.More {
			return nil
		}
		since, max = s.next(since, max, b.Changes)
	}
	return nil
}

// from is where a poll from cursor cur starts: the watermark less the
// overlap (the zero time: the EHR's first change).
func (s *Syncer) from(cur SyncCursor) time.Time {
	if cur.Watermark.IsZero() {
		return cur.Watermark
	}
	return cur.Watermark.Add(-s.cfg.Overlap)
}

// next is where the next batch of one poll starts, and its size. A feed
// tells changes after an instant, so changes of the instant a batch ended
// at may lie beyond its end: the next batch starts just before that
// instant (what it reads again is deduplicated by version). A batch that
// lay wholly within one millisecond would give itself again: the next asks
// for twice as many (up to 8 batches), and past that moves on from the
// instant (more changes than that in one millisecond: the rest are lost).
func (s *Syncer) next(since time.Time, max int, changes []AppointmentChange) (time.Time, int) {
	newest := newestChange(since, changes)
	switch next := newest.Add(-time.Millisecond); {
	case next.After(since):
		return next, s.cfg.Batch
	case max < maxTieBatches*s.cfg.Batch:
		return since, 2 * max
	}
	return newest, s.cfg.Batch
}

// maxReread bounds the batches of one poll, those reading the overlap
// again included, to maxReread × MaxBatches.
const maxReread = 4

// maxTieBatches bounds how far next grows a batch to read the changes of
// one instant.
const maxTieBatches = 8

// newestChange is the newest UpdatedAt of changes, at least from. (Within
// a poll, where the next batch starts; the watermark is newestWithin.)
func newestChange(from time.Time, changes []AppointmentChange) time.Time {
	for _, c := range changes {
		if c.Appointment.UpdatedAt.After(from) {
			from = c.Appointment.UpdatedAt
		}
	}
	return from
}

// failureCode is the code of err kept as a poll's failure: a core.Error's
// code, else "internal" (an EHR's own words may hold patient data).
func failureCode(err error) string {
	var ce *core.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ce):
		return ce.Code
	}
	return "internal"
}

// wrapNonNil wraps err with a formatted context, or returns nil.
func wrapNonNil(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}

// batch is what one batch's transaction does, counted once it commits.
type batch struct {
	changes, skipped, unchanged int
	events                      []core.Event
	aheadN                      int       // changes past the bound (new versions)
	aheadAt                     time.Time // the latest of them
}

// takeIn classifies one batch of changes and writes its events, the states
// and the cursor in one transaction, which commits only while this
// instance holds the lease. The watermark moves to the newest change
// within bound (newestWithin). last tells the batch that ends the feed:
// the baseline is done with it. A batch without changes still takes over
// the API paths' lapsed intents (classifyBatch), so an idle EHR does not
// keep their changes unpublished.
func (s *Syncer) takeIn(ctx context.Context, cur SyncCursor, changes []AppointmentChange, bound time.Time, last bool, res *PollResult) (SyncCursor, error) {
	next := SyncCursor{Watermark: newestWithin(cur.Watermark, changes, bound), Baselined: cur.Baselined || last}
	var b batch
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		b = batch{}
		if err := r.Sync.Hold(ctx, s.cfg.System, s.cfg.Owner, s.cfg.Lease); err != nil {
			return err
		}
		if err := s.classifyBatch(ctx, r, changes, res.Baseline, bound, &b); err != nil {
			return err
		}
		return r.Sync.Advance(ctx, s.cfg.System, next)
	})
	if err != nil {
		return cur, wrapNonNil(err, "take in the changes of %s", s.cfg.System)
	}
	res.Changes += b.changes
	res.Skipped += b.skipped
	res.Unchanged += b.unchanged
	res.Ahead += b.aheadN
	if b.aheadAt.After(res.AheadAt) {
		res.AheadAt = b.aheadAt
	}
	for _, e := range b.events {
		res.Events[e.Type]++
	}
	return next, nil
}
