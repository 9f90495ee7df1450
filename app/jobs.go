package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/postgres"
)

// purgeEvery is how often each instance removes expired Idempotency-Keys.
const (
	purgeEvery = time.Hour
	purgeBatch = 1000
)

// purgeIdempotency removes Idempotency-Keys past their retention, a
// bounded batch at a time, until ctx is done. Every instance runs it; the
// deletes skip rows another instance holds.
func purgeIdempotency(ctx context.Context, idem *postgres.Idempotency, log *slog.Logger, purged prometheus.Counter) {
	t := time.NewTicker(purgeEvery)
	defer t.Stop()
	for {
		for {
			n, err := idem.PurgeIdempotency(ctx, purgeBatch)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn("purge idempotency keys", "error", err.Error())
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
