package app

import (
	"context"
	"time"
)

// pinTimeout bounds one pin of the EHR systems of older bookings.
const pinTimeout = 30 * time.Second

// pinEHRSystems records the EHR system of the bookings, holds and
// Idempotency-Key outcomes written before they recorded one (migration
// 0017): the integration EHR of their business in the systems in force,
// which are those they were made with (postgres.Store.PinEHRSystems). It
// runs at start and before each reload of the EHR systems file. A failure
// is logged and the start or reload goes on: until a later pin, those rows
// are read in the integration EHR of their business in force.
func (a *App) pinEHRSystems(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pinTimeout)
	defer cancel()
	n, err := a.db.PinEHRSystems(ctx, func(business string) (string, bool) {
		name, sch := a.ehrs.Integration(business)
		return name, sch != nil
	})
	if err != nil {
		a.log.Warn("pin the EHR system of older bookings", "error", err.Error())
	}
	if n > 0 {
		a.log.Info("older bookings pinned to their EHR system", "rows", n)
	}
}
