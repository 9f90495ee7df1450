package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/carebridge/carebridge/core/audit"
)

// The hash chain of the audit trail: appending events after its head.

// appendTx appends calls in tx after the chain head, which it locks until
// tx ends, and returns the new head. Another transaction appending to the
// chain waits for tx, and a writer that cached the old head finds it moved.
func appendTx(ctx context.Context, tx pgx.Tx, calls []*auditCall) (chainHead, error) {
	var head chainHead
	if err := tx.QueryRow(ctx, `SELECT id, hash FROM audit_chain_head FOR UPDATE`).Scan(&head.id, &head.hash); err != nil {
		return chainHead{}, fmt.Errorf("lock the chain head: %w", err)
	}
	args, next := chain(calls, head)
	tag, err := tx.Exec(ctx, appendAudit, args...)
	return next, inserted(tag.RowsAffected(), len(calls), err)
}

// appendPending appends, in tx, the event that ctx carries to be committed
// with the change tx makes (audit.Pending), naming resourceID, the changed
// row, and businessID, its business ("" for none). It returns the pending event, nil when ctx carries none: the
// caller marks it committed once tx has. A failure is audit.ErrUnavailable.
// Call it last in tx: the chain head stays locked until tx ends.
func appendPending(ctx context.Context, tx pgx.Tx, resourceID, businessID string) (*audit.Pending, error) {
	p := audit.PendingFrom(ctx)
	if p == nil {
		return nil, nil
	}
	e := p.Event
	e.ResourceID, e.BusinessID, e.At = resourceID, businessID, time.Now()
	c, err := newAuditCall(e)
	if err == nil {
		_, err = appendTx(ctx, tx, []*auditCall{c})
	}
	if err != nil {
		return nil, audit.ErrUnavailable.Wrap(fmt.Errorf("append the audit event: %w", err))
	}
	return p, nil
}

// inserted is the outcome of appendAudit for n events.
func inserted(rows int64, n int, err error) error {
	switch {
	case err != nil:
		return err
	case rows == 0:
		return errChainMoved
	case rows != int64(n):
		return fmt.Errorf("%d of %d events inserted", rows, n)
	}
	return nil
}

// readHead reads the chain head.
func (l *AuditLog) readHead() (chainHead, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	var h chainHead
	if err := l.pool.QueryRow(ctx, `SELECT id, hash FROM audit_chain_head`).Scan(&h.id, &h.hash); err != nil {
		return h, fmt.Errorf("read the chain head: %w", err)
	}
	return h, nil
}

// appendAudit appends a batch in one statement (one round trip, its own
// transaction): it moves the chain head from the expected event to the
// batch's last, and inserts the rows only if that worked. The UPDATE's row
// lock serialises the writers of every instance until commit; one that
// finds the head moved (PostgreSQL re-checks the WHERE after the lock
// wait) updates nothing and so inserts nothing.
const appendAudit = `
	WITH head AS (
		UPDATE audit_chain_head SET id = $12, hash = $13 WHERE id = $14 AND hash = $15 RETURNING id
	)
	INSERT INTO audit_events (id, at, request_id, actor, action, resource_type, resource_id, outcome, status, detail, hash,
		business_id)
	SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::text[], $6::text[],
		$7::text[], $8::text[], $9::smallint[], $10::jsonb[], $11::bytea[], $16::uuid[])
	WHERE EXISTS (SELECT FROM head)`

// auditColumns holds a batch column by column, for one INSERT … unnest.
type auditColumns struct {
	id                                                          []int64
	at                                                          []time.Time
	requestID, actor, action, resourceType, resourceID, outcome []string
	status                                                      []int16
	detail                                                      []string
	hash                                                        [][]byte
	business                                                    []pgtype.UUID
}

func (c *auditColumns) add(e audit.Event, detail, hash []byte, business pgtype.UUID) {
	c.id = append(c.id, e.ID)
	c.at = append(c.at, e.At)
	c.requestID = append(c.requestID, e.RequestID)
	c.actor = append(c.actor, e.Actor)
	c.action = append(c.action, string(e.Action))
	c.resourceType = append(c.resourceType, e.ResourceType)
	c.resourceID = append(c.resourceID, e.ResourceID)
	c.outcome = append(c.outcome, string(e.Outcome))
	c.status = append(c.status, int16(e.Status))
	c.detail = append(c.detail, string(detail))
	c.hash = append(c.hash, hash)
	c.business = append(c.business, business)
}

// chain gives calls their ids and hashes after head: the arguments of
// appendAudit and the head they lead to.
func chain(calls []*auditCall, head chainHead) ([]any, chainHead) {
	var cols auditColumns
	next := head
	for _, c := range calls {
		next.id++
		e := c.e
		e.ID = next.id
		next.hash = linkDetail(next.hash, e, c.detail)
		cols.add(e, c.detail, next.hash, c.business)
	}
	return []any{cols.id, cols.at, cols.requestID, cols.actor, cols.action, cols.resourceType,
		cols.resourceID, cols.outcome, cols.status, cols.detail, cols.hash, next.id, next.hash, head.id, head.hash,
		cols.business}, next
}

// append chains calls after head and appends them in one statement; it
// returns the new head.
func (l *AuditLog) append(calls []*auditCall, head chainHead) (chainHead, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	args, next := chain(calls, head)
	tag, err := l.pool.Exec(ctx, appendAudit, args...)
	return next, inserted(tag.RowsAffected(), len(calls), err)
}
