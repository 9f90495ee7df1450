package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/ehr"
)

// Sync is the store of EHR sync: each system's cursor and poller lease
// (ehr_sync_cursors), the appointment states changes are classified
// against (ehr_appointment_states) and the API paths' intents
// (ehr_pending_changes). It implements ehr.SyncStore on the
// pool and ehr.SyncRepo inside EHRTx's transactions.
type Sync struct {
	db dbtx
}

// Sync returns sync's store outside any transaction.
func (s *Store) Sync() *Sync { return &Sync{db: s.pool} }

var (
	_ ehr.SyncStore = (*Sync)(nil)
	_ ehr.SyncRepo  = (*Sync)(nil)
)

// Claim leases system's poller to owner unless another owner's lease is
// still running (the database's clock decides), creating its cursor on
// the first claim. A claim racing a transaction that Holds the lease waits
// for it, then sees the renewed lease.
func (r *Sync) Claim(ctx context.Context, system, owner string, lease time.Duration) (ehr.SyncCursor, bool, error) {
	var watermark *time.Time
	var c ehr.SyncCursor
	err := r.db.QueryRow(ctx, `
		INSERT INTO ehr_sync_cursors (system, lease_owner, lease_until) VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (system) DO UPDATE SET lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
		WHERE ehr_sync_cursors.lease_owner IS NULL OR ehr_sync_cursors.lease_owner = EXCLUDED.lease_owner
		   OR ehr_sync_cursors.lease_until <= now()
		RETURNING watermark, baselined`,
		system, owner, lease.Seconds()).Scan(&watermark, &c.Baselined)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ehr.SyncCursor{}, false, nil
	case err != nil:
		return ehr.SyncCursor{}, false, fmt.Errorf("claim the sync lease of %s: %w", system, err)
	}
	if watermark != nil {
		c.Watermark = watermark.UTC()
	}
	return c, true, nil
}

// Polled notes the end of owner's poll of system and its failure's code.
func (r *Sync) Polled(ctx context.Context, system, owner, failure string) error {
	_, err := r.db.Exec(ctx, `UPDATE ehr_sync_cursors SET last_poll_at = now(), last_error = $3 WHERE system = $1 AND lease_owner = $2`,
		system, owner, failure)
	if err != nil {
		return fmt.Errorf("note the poll of %s: %w", system, err)
	}
	return nil
}

// Hold renews owner's running lease of system and locks its cursor until
// the transaction ends; a lease run out or taken over is
// ehr.ErrSyncLeaseLost.
func (r *Sync) Hold(ctx context.Context, system, owner string, lease time.Duration) error {
	tag, err := r.db.Exec(ctx, `
		UPDATE ehr_sync_cursors SET lease_until = now() + make_interval(secs => $3)
		WHERE system = $1 AND lease_owner = $2 AND lease_until > now()`,
		system, owner, lease.Seconds())
	switch {
	case err != nil:
		return fmt.Errorf("hold the sync lease of %s: %w", system, err)
	case tag.RowsAffected() == 0:
		return ehr.ErrSyncLeaseLost
	}
	return nil
}

// Advance moves system's cursor forward: the watermark never goes back.
func (r *Sync) Advance(ctx context.Context, system string, c ehr.SyncCursor) error {
	var watermark *time.Time
	if !c.Watermark.IsZero() {
		watermark = &c.Watermark
	}
	tag, err := r.db.Exec(ctx, `
		UPDATE ehr_sync_cursors SET watermark = GREATEST(watermark, $2), baselined = baselined OR $3
		WHERE system = $1`,
		system, watermark, c.Baselined)
	switch {
	case err != nil:
		return fmt.Errorf("advance the sync cursor of %s: %w", system, err)
	case tag.RowsAffected() == 0:
		return fmt.Errorf("advance the sync cursor of %s: no cursor", system)
	}
	return nil
}

// Rewind sets system's watermark back to to when it lies after it.
func (r *Sync) Rewind(ctx context.Context, system string, to time.Time) error {
	_, err := r.db.Exec(ctx, `UPDATE ehr_sync_cursors SET watermark = $2 WHERE system = $1 AND watermark > $2`, system, to)
	if err != nil {
		return fmt.Errorf("set back the sync cursor of %s: %w", system, err)
	}
	return nil
}

const stateColumns = `appointment_id, agent_id, version, status, start_at, end_at, business_id`

// Known returns the states of system among ids, locked until the
// transaction ends (in id order, so two lockers never deadlock).
func (r *Sync) Known(ctx context.Context, system string, ids []string) (map[string]ehr.AppointmentState, error) {
	out := map[string]ehr.AppointmentState{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := r.db.Query(ctx, `SELECT `+stateColumns+` FROM ehr_appointment_states
		WHERE system = $1 AND appointment_id = ANY($2) ORDER BY appointment_id FOR UPDATE`, system, ids)
	states, err := pgx.CollectRows(rows, scanState)
	if err != nil {
		return nil, fmt.Errorf("read the appointment states of %s: %w", system, err)
	}
	for _, s := range states {
		out[s.ID] = s
	}
	return out, nil
}

// KnownBetween returns system's states not cancelled that start in
// [from, to), at most max, by start.
func (r *Sync) KnownBetween(ctx context.Context, system string, from, to time.Time, max int) ([]ehr.AppointmentState, error) {
	rows, _ := r.db.Query(ctx, `SELECT `+stateColumns+` FROM ehr_appointment_states
		WHERE system = $1 AND status <> 'cancelled' AND start_at >= $2 AND start_at < $3
		ORDER BY start_at, appointment_id LIMIT $4`, system, from, to, max)
	states, err := pgx.CollectRows(rows, scanState)
	if err != nil {
		return nil, fmt.Errorf("read the appointment states of %s: %w", system, err)
	}
	return states, nil
}

func scanState(row pgx.CollectableRow) (ehr.AppointmentState, error) {
	var s ehr.AppointmentState
	var status string
	err := row.Scan(&s.ID, &s.AgentID, &s.Version, &status, &s.Start, &s.End, &s.Business)
	s.Status, s.Start, s.End = ehr.AppointmentStatus(status), s.Start.UTC(), s.End.UTC()
	return s, err
}

// Booked returns the businesses the booking log records each of system's
// appointment ids under.
func (r *Sync) Booked(ctx context.Context, system string, ids []string) (map[string][]string, error) {
	out := map[string][]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := r.db.Query(ctx, `SELECT DISTINCT appointment_id, business_id FROM appointment_bookings
		WHERE ehr_system = $1 AND appointment_id = ANY($2) ORDER BY appointment_id, business_id`, system, ids)
	var id, business string
	_, err := pgx.ForEachRow(rows, []any{&id, &business}, func() error {
		if !slices.Contains(out[id], business) {
			out[id] = append(out[id], business)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the bookings of appointments: %w", err)
	}
	return out, nil
}

// Remember stores s as system's state of appointment s.ID.
func (r *Sync) Remember(ctx context.Context, system string, s ehr.AppointmentState) error {
	_, err := r.db.Exec(ctx, `
		INSERT INTO ehr_appointment_states (system, `+stateColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (system, appointment_id) DO UPDATE SET agent_id = EXCLUDED.agent_id, version = EXCLUDED.version,
			status = EXCLUDED.status, start_at = EXCLUDED.start_at, end_at = EXCLUDED.end_at,
			business_id = EXCLUDED.business_id, updated_at = now()`,
		system, s.ID, s.AgentID, s.Version, string(s.Status), s.Start, s.End, s.Business)
	if err != nil {
		return fmt.Errorf("remember the state of an appointment of %s: %w", system, err)
	}
	return nil
}

const intentColumns = `id, appointment_id, agent_id, status, start_at, end_at, business_id, deferred, lapsed`

// Intend records intent p of system until lease from now.
func (r *Sync) Intend(ctx context.Context, system string, p ehr.PendingChange, lease time.Duration) error {
	_, err := r.db.Exec(ctx, `
		INSERT INTO ehr_pending_changes (system, id, appointment_id, agent_id, status, start_at, end_at, business_id, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9))`,
		system, p.ID, p.AppointmentID, p.AgentID, string(p.Status), p.Start, p.End, p.Business, lease.Seconds())
	if err != nil {
		return fmt.Errorf("record an intent of %s: %w", system, err)
	}
	return nil
}

// Pending returns system's running intents for the appointments among ids,
// locked until the transaction ends (in appointment order). An intent an
// API path is settling is waited for, and then is gone.
func (r *Sync) Pending(ctx context.Context, system string, ids []string) (map[string][]ehr.PendingChange, error) {
	out := map[string][]ehr.PendingChange{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := r.db.Query(ctx, `SELECT `+intentColumns+` FROM ehr_pending_changes
		WHERE system = $1 AND appointment_id = ANY($2) AND NOT deferred AND NOT lapsed AND expires_at > now()
		ORDER BY appointment_id, created_at, id FOR UPDATE`, system, ids)
	ps, err := pgx.CollectRows(rows, scanIntent)
	if err != nil {
		return nil, fmt.Errorf("read the intents of %s: %w", system, err)
	}
	for _, p := range ps {
		out[p.AppointmentID] = append(out[p.AppointmentID], p)
	}
	return out, nil
}

// Defer marks system's intent id deferred to its API path.
func (r *Sync) Defer(ctx context.Context, system, id string) error {
	if _, err := r.db.Exec(ctx, `UPDATE ehr_pending_changes SET deferred = true WHERE system = $1 AND id = $2`, system, id); err != nil {
		return fmt.Errorf("defer to an intent of %s: %w", system, err)
	}
	return nil
}

// Settle removes system's intent id and returns it as it was.
func (r *Sync) Settle(ctx context.Context, system, id string) (ehr.PendingChange, bool, error) {
	rows, _ := r.db.Query(ctx, `DELETE FROM ehr_pending_changes WHERE system = $1 AND id = $2 RETURNING `+intentColumns, system, id)
	p, err := pgx.CollectOneRow(rows, scanIntent)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ehr.PendingChange{}, false, nil
	case err != nil:
		return ehr.PendingChange{}, false, fmt.Errorf("settle an intent of %s: %w", system, err)
	}
	return p, true, nil
}

// Withdraw removes system's intent id unless the poller deferred to it.
func (r *Sync) Withdraw(ctx context.Context, system, id string) error {
	if _, err := r.db.Exec(ctx, `DELETE FROM ehr_pending_changes WHERE system = $1 AND id = $2 AND NOT deferred`, system, id); err != nil {
		return fmt.Errorf("withdraw an intent of %s: %w", system, err)
	}
	return nil
}

// Lapse removes system's lapsed intents that expired before keep ago, then
// marks at most max of its expired ones lapsed and returns them, oldest
// first. An intent an API path is settling is waited for, and then is
// gone.
func (r *Sync) Lapse(ctx context.Context, system string, keep time.Duration, max int) ([]ehr.PendingChange, error) {
	_, err := r.db.Exec(ctx, `DELETE FROM ehr_pending_changes
		WHERE system = $1 AND lapsed AND expires_at < now() - make_interval(secs => $2)`, system, keep.Seconds())
	if err != nil {
		return nil, fmt.Errorf("remove the lapsed intents of %s: %w", system, err)
	}
	rows, _ := r.db.Query(ctx, `
		WITH due AS (
			SELECT id FROM ehr_pending_changes WHERE system = $1 AND NOT lapsed AND expires_at <= now()
			ORDER BY expires_at, id LIMIT $2 FOR UPDATE)
		UPDATE ehr_pending_changes p SET lapsed = true FROM due WHERE p.system = $1 AND p.id = due.id
		RETURNING p.expires_at, `+prefixed("p.", intentColumns), system, max)
	type lapsed struct {
		expires time.Time
		p       ehr.PendingChange
	}
	ls, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (lapsed, error) {
		var l lapsed
		err := row.Scan(append([]any{&l.expires}, intentFields(&l.p)...)...)
		return l, err
	})
	if err != nil {
		return nil, fmt.Errorf("take over the expired intents of %s: %w", system, err)
	}
	slices.SortFunc(ls, func(a, b lapsed) int { return a.expires.Compare(b.expires) })
	out := make([]ehr.PendingChange, len(ls))
	for i, l := range ls {
		out[i] = normalIntent(l.p)
	}
	return out, nil
}

// prefixed qualifies each of a comma list of columns with prefix.
func prefixed(prefix, columns string) string {
	return prefix + strings.ReplaceAll(columns, ", ", ", "+prefix)
}

// intentFields are the scan targets of intentColumns in p.
func intentFields(p *ehr.PendingChange) []any {
	return []any{&p.ID, &p.AppointmentID, &p.AgentID, (*string)(&p.Status), &p.Start, &p.End, &p.Business, &p.Deferred, &p.Lapsed}
}

func scanIntent(row pgx.CollectableRow) (ehr.PendingChange, error) {
	var p ehr.PendingChange
	err := row.Scan(intentFields(&p)...)
	return normalIntent(p), err
}

// normalIntent is p with its times in UTC.
func normalIntent(p ehr.PendingChange) ehr.PendingChange {
	p.Start, p.End = p.Start.UTC(), p.End.UTC()
	return p
}

// Status returns system's SyncStatus; found is false before its first
// claim.
func (r *Sync) Status(ctx context.Context, system string) (st ehr.SyncStatus, found bool, err error) {
	var watermark, polled *time.Time
	var failure *string
	err = r.db.QueryRow(ctx, `SELECT watermark, baselined, last_poll_at, last_error FROM ehr_sync_cursors WHERE system = $1`,
		system).Scan(&watermark, &st.Baselined, &polled, &failure)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return ehr.SyncStatus{}, false, nil
	case err != nil:
		return ehr.SyncStatus{}, false, fmt.Errorf("read the sync status of %s: %w", system, err)
	}
	if watermark != nil {
		st.Watermark = watermark.UTC()
	}
	if polled != nil {
		st.LastPollAt = polled.UTC()
	}
	if failure != nil {
		st.LastError = *failure
	}
	return st, true, nil
}
