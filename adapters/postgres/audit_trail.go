package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/core/audit"
)

// AuditTrail reads the audit trail.
type AuditTrail struct {
	pool *pgxpool.Pool
}

// AuditTrail returns the reader of the audit trail.
func (s *Store) AuditTrail() *AuditTrail { return &AuditTrail{pool: s.pool} }

// AuditFilter selects events for List. Zero fields do not filter.
type AuditFilter struct {
	Since    time.Time    // events at or after
	Actor    string       // exactly this actor
	Action   audit.Action // exactly this action
	Business string       // exactly this business id; List refuses a non-UUID
	Limit    int          // the most recent Limit of them; 0: every one
}

const auditSelect = `id, at, request_id, actor, action, resource_type, resource_id, business_id, outcome, status, detail, hash`

// List returns the events that match f, oldest first: the f.Limit most
// recent of them (by at, then id).
func (r *AuditTrail) List(ctx context.Context, f AuditFilter) ([]audit.Event, error) {
	var where []string
	var args []any
	cond := func(sql string, arg any) {
		args = append(args, arg)
		where = append(where, fmt.Sprintf(sql, len(args)))
	}
	if !f.Since.IsZero() {
		cond("at >= $%d", f.Since)
	}
	if f.Actor != "" {
		cond("actor = $%d", f.Actor)
	}
	if f.Action != "" {
		cond("action = $%d", string(f.Action))
	}
	if f.Business != "" {
		u, ok := parseUUID(f.Business)
		if !ok {
			return nil, fmt.Errorf("list audit events: business id %q is not a UUID", f.Business)
		}
		cond("business_id = $%d", u)
	}
	q := `SELECT ` + auditSelect + ` FROM audit_events`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY at DESC, id DESC`
	if f.Limit > 0 {
		args = append(args, f.Limit)
		q += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := r.pool.Query(ctx, `SELECT * FROM (`+q+`) recent ORDER BY at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	events, err := pgx.CollectRows(rows, scanAuditEvent)
	if err != nil {
		return nil, fmt.Errorf("list audit events: %w", err)
	}
	return events, nil
}

// Verify recomputes the chain over every event, in id order, and compares
// its end with the chain head, all in one snapshot so concurrent writers do
// not disturb it. events is the number of events; when ok is false,
// firstBad is where the chain stops checking out (see verifier).
func (r *AuditTrail) Verify(ctx context.Context) (events int, firstBad int64, ok bool, err error) {
	tx, err := r.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return 0, 0, false, fmt.Errorf("verify audit trail: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))

	var headID int64
	var headHash []byte
	if err := tx.QueryRow(ctx, `SELECT id, hash FROM audit_chain_head`).Scan(&headID, &headHash); err != nil {
		return 0, 0, false, fmt.Errorf("verify audit trail: read chain head: %w", err)
	}
	// The rows stream from the server as they are read.
	rows, err := tx.Query(ctx, `SELECT `+auditSelect+` FROM audit_events ORDER BY id`)
	if err != nil {
		return 0, 0, false, fmt.Errorf("verify audit trail: %w", err)
	}
	defer rows.Close()
	var v verifier
	for rows.Next() {
		e, err := scanAuditEvent(rows)
		if errors.Is(err, errAuditDetail) {
			e.Hash = nil // a detail that is not an object was never written: a bad event
		} else if err != nil {
			return 0, 0, false, fmt.Errorf("verify audit trail: %w", err)
		}
		v.Next(e)
	}
	if err := rows.Err(); err != nil {
		return 0, 0, false, fmt.Errorf("verify audit trail: %w", err)
	}
	ok = v.Head(headID, headHash)
	return v.Events(), v.FirstBad(), ok, nil
}

// errAuditDetail is a stored detail that is not a JSON object, which the
// writer never stores.
var errAuditDetail = errors.New("detail is not a JSON object")

func scanAuditEvent(row pgx.CollectableRow) (audit.Event, error) {
	var e audit.Event
	var action, outcome string
	var detail []byte
	var business pgtype.UUID
	if err := row.Scan(&e.ID, &e.At, &e.RequestID, &e.Actor, &action, &e.ResourceType, &e.ResourceID,
		&business, &outcome, &e.Status, &detail, &e.Hash); err != nil {
		return audit.Event{}, err
	}
	e.BusinessID = business.String() // "" when NULL
	e.At = e.At.UTC()
	e.Action, e.Outcome = audit.Action(action), audit.Outcome(outcome)
	if len(detail) == 0 || detail[0] != '{' || json.Unmarshal(detail, &e.Detail) != nil {
		return e, fmt.Errorf("audit event %d: %w", e.ID, errAuditDetail)
	}
	if len(e.Detail) == 0 {
		e.Detail = nil
	}
	return e, nil
}
