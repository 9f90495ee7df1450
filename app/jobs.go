package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// How often each instance removes expired Idempotency-Keys, and sweeps
// the object store.
const (
	purgeEvery = time.Hour
	purgeBatch = 1000
	sweepEvery = 10 * time.Minute
	// reconcileEvery is how often each instance settles the bookings
	// whose EHR answer was lost: within holdLease (2 min) + this of the
	// loss, well inside the contract's 5 minutes.
	reconcileEvery = 30 * time.Second
	reconcileBatch = 100
)

// jobMetrics count what the jobs did.
type jobMetrics struct {
	purged prometheus.Counter // expired Idempotency-Keys removed
	// reconciled counts the bookings whose lost outcome was settled, by
	// outcome (recorded, released, failed).
	reconciled *prometheus.CounterVec
	swept      prometheus.Counter // orphan objects removed
	// sweptIncomplete counts the leftovers of unfinished writes removed.
	sweptIncomplete prometheus.Counter
}

// newJobMetrics registers the counters of the Idempotency-Key purge, the
// booking reconciler and the object sweeper on reg.
func newJobMetrics(reg prometheus.Registerer) *jobMetrics {
	m := &jobMetrics{
		purged: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_idempotency_keys_purged_total",
			Help: "Idempotency-Keys removed after their retention."}),
		reconciled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carebridge_bookings_reconciled_total",
			Help: "Bookings whose EHR answer was lost (a time-out, a crash), settled by the reconciler: recorded (found in the EHR), released (not found), failed (tried again later)."},
			[]string{"outcome"}),
		swept: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_orphan_objects_removed_total",
			Help: "Objects without a blob entry, older than an hour, removed by the sweeper."}),
		sweptIncomplete: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_incomplete_uploads_removed_total",
			Help: "Temporary files and incomplete multipart uploads of unfinished writes, older than a day, removed by the sweeper."}),
	}
	reg.MustRegister(m.purged, m.reconciled, m.swept, m.sweptIncomplete)
	return m
}

// reconcileBookings settles, every `every` until ctx is done, the
// bookings whose EHR answer was lost (ehr.Scheduling.Reconcile), a batch
// at a time until a batch comes back short. Every instance runs it: each
// booking is leased to one.
func reconcileBookings(ctx context.Context, every time.Duration, in *ehr.Scheduling, log *slog.Logger, done *prometheus.CounterVec) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			r, err := in.Reconcile(ctx, reconcileBatch)
			done.WithLabelValues("recorded").Add(float64(r.Recorded))
			done.WithLabelValues("released").Add(float64(r.Released))
			done.WithLabelValues("failed").Add(float64(r.Failed))
			if r.Recorded+r.Released > 0 {
				log.Info("bookings reconciled", "recorded", r.Recorded, "released", r.Released)
			}
			if err != nil && ctx.Err() == nil {
				log.Warn("reconcile bookings", "error", err.Error())
			}
			if err != nil || r.Recorded+r.Released+r.Failed < reconcileBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// purgeIdempotency removes Idempotency-Keys past their retention, every
// purgeEvery until ctx is done.
func purgeIdempotency(ctx context.Context, idem *postgres.Idempotency, log *slog.Logger, purged prometheus.Counter) {
	purgeLoop(ctx, purgeEvery, "purge idempotency keys", idem.PurgeIdempotency, log, purged)
}

// purgeLoop runs purge every `every` until ctx is done, a bounded batch
// at a time until a batch comes back short, and counts what went. Every
// instance runs it: the purges delete with SKIP LOCKED, so rows another
// instance holds are skipped, never deleted twice.
func purgeLoop(ctx context.Context, every time.Duration, what string, purge func(context.Context, int) (int64, error),
	log *slog.Logger, purged prometheus.Counter) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		for {
			n, err := purge(ctx, purgeBatch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn(what, "error", err.Error())
				}
				break
			}
			purged.Add(float64(n))
			if n < purgeBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweepObjects cleans the object store every sweepEvery until ctx is done:
// it removes the objects that no blob entry names and that are older than
// storage.OrphanAge (a crash between an object's write and its entry's
// insert leaves them), then what writes that never finished left and that
// began over storage.IncompleteAge ago (temporary files, incomplete
// multipart uploads: a process killed mid-upload leaves them), counting
// each. Every instance runs it; the claim lets one at a time sweep, the
// others skip that round, and what another sweep removed first is not an
// error.
func sweepObjects(ctx context.Context, db *postgres.Store, blobs *storage.Service, log *slog.Logger, orphans, incomplete prometheus.Counter) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		_, err := db.SweepClaim(ctx, func(ctx context.Context) error {
			now := time.Now()
			n, err := blobs.SweepOrphans(ctx, now.Add(-storage.OrphanAge))
			orphans.Add(float64(n))
			if n > 0 {
				log.Info("orphan objects removed", "count", n)
			}
			m, ierr := blobs.SweepIncomplete(ctx, now.Add(-storage.IncompleteAge))
			incomplete.Add(float64(m))
			if m > 0 {
				log.Info("incomplete uploads removed", "count", m)
			}
			return errors.Join(err, ierr)
		})
		if err != nil && ctx.Err() == nil {
			log.Warn("sweep objects", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
