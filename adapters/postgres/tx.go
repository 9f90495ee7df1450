package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// txn is the transaction a Transactor gives the repositories of one
// WithinTx. Besides the statements of the repositories it holds what must
// be written last (the request's pending audit event, which locks the
// audit chain's head until the transaction ends) and what to do once it
// has committed.
type txn struct {
	pgx.Tx
	last  []func(ctx context.Context, tx pgx.Tx) error
	after []func()
}

// withinTx runs fn in one transaction and commits it when fn succeeds.
func (s *Store) withinTx(ctx context.Context, fn func(t *txn) error) error {
	var t *txn
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t = &txn{Tx: tx}
		if err := fn(t); err != nil {
			return err
		}
		for _, f := range t.last {
			if err := f(ctx, tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, f := range t.after {
		f()
	}
	return nil
}

// audited runs change, then appends the request's pending audit event
// (audit.Pending) naming the resource and business change returns, and
// marks it committed once the transaction has. In a Transactor's
// transaction the event is appended as that transaction's last statement;
// on the pool, change and event have a transaction of their own.
func audited(ctx context.Context, db dbtx, change func(tx pgx.Tx) (resourceID, businessID string, err error)) error {
	if t, ok := db.(*txn); ok {
		resource, business, err := change(t.Tx)
		if err != nil {
			return err
		}
		t.last = append(t.last, func(ctx context.Context, tx pgx.Tx) error {
			p, err := appendPending(ctx, tx, resource, business)
			if p != nil {
				t.after = append(t.after, p.MarkCommitted)
			}
			return err
		})
		return nil
	}
	var p *audit.Pending
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		resource, business, err := change(tx)
		if err != nil {
			return err
		}
		p, err = appendPending(ctx, tx, resource, business)
		return err
	})
	if err == nil && p != nil {
		p.MarkCommitted()
	}
	return err
}

// BusinessTx is the business core's Transactor.
type BusinessTx struct{ s *Store }

// BusinessTx returns the business core's Transactor.
func (s *Store) BusinessTx() BusinessTx { return BusinessTx{s} }

// WithinTx runs fn with repositories of one transaction.
func (b BusinessTx) WithinTx(ctx context.Context, fn func(ctx context.Context, r business.Repos) error) error {
	return b.s.withinTx(ctx, func(t *txn) error {
		return fn(ctx, business.Repos{Businesses: &BusinessRepo{db: t}, Locations: &LocationRepo{db: t},
			Hours: &HoursRepo{db: t}, Logos: &LogoRepo{db: t}, Outbox: &Outbox{db: t}})
	})
}

// StorageTx is the storage core's Transactor.
type StorageTx struct{ s *Store }

// StorageTx returns the storage core's Transactor.
func (s *Store) StorageTx() StorageTx { return StorageTx{s} }

// WithinTx runs fn with repositories of one transaction.
func (st StorageTx) WithinTx(ctx context.Context, fn func(ctx context.Context, r storage.Repos) error) error {
	return st.s.withinTx(ctx, func(t *txn) error {
		return fn(ctx, storage.Repos{Blobs: &BlobRepo{db: t}, Outbox: &Outbox{db: t}})
	})
}

// EHRTx is the EHR core's Transactor (bookings and their events).
type EHRTx struct{ s *Store }

// EHRTx returns the EHR core's Transactor.
func (s *Store) EHRTx() EHRTx { return EHRTx{s} }

// WithinTx runs fn with repositories of one transaction.
func (e EHRTx) WithinTx(ctx context.Context, fn func(ctx context.Context, r ehr.Repos) error) error {
	return e.s.withinTx(ctx, func(t *txn) error {
		return fn(ctx, ehr.Repos{Idempotency: &Idempotency{db: t}, Bookings: &Bookings{db: t}, Outbox: &Outbox{db: t}, Sync: &Sync{db: t}})
	})
}

var (
	_ business.Transactor = BusinessTx{}
	_ storage.Transactor  = StorageTx{}
	_ ehr.Transactor      = EHRTx{}
)
