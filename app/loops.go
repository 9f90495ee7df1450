package app

import (
	"cmp"
	"context"
)

// loops are the long-running parts of the service besides the server and
// the audit writer, each running until its ctx is done. Run starts every
// one of them, here and nowhere else (no adapter or core constructor
// starts a goroutine), and waits for them at shutdown once the server has
// stopped: the audit trail's tally of refused requests, the Idempotency-Key
// purge, the object sweeper, the booking reconciler, EHR sync (a
// supervisor that runs a poller per EHR system with sync on, through
// reloads of the EHR systems file), the person links' listener (while it
// listens, search reads each business's links from memory), and the
// events' delivery (wake-ups, dispatcher, relay, purge).
func (a *App) loops() []func(context.Context) {
	log := a.log.With("component", "jobs")
	loops := []func(context.Context){
		a.audit.runTally,
		func(ctx context.Context) { purgeIdempotency(ctx, a.db.Idempotency(), log, a.jobs.purged) },
		func(ctx context.Context) {
			sweepObjects(ctx, a.db, a.blobs, log, a.jobs.swept, a.jobs.sweptIncomplete)
		},
		func(ctx context.Context) {
			reconcileBookings(ctx, cmp.Or(a.reconcileEvery, reconcileEvery), a.scheduling, log, a.jobs.reconciled)
		},
		a.ehrs.Run,
		func(ctx context.Context) {
			a.links.Run(ctx, func(err error) { log.Warn("listen for person links", "error", err.Error()) })
		},
	}
	return append(loops, a.events.loops()...)
}
