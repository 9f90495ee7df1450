package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
)

// Compile-time checks that the store implements the members ports.
var (
	_ business.MemberRepo = (*MemberRepo)(nil)
	_ storage.Members     = (*Store)(nil)
)

// MemberRepo keeps the members of businesses; it implements
// business.MemberRepo.
type MemberRepo struct {
	db dbtx
}

// Members returns the business-member repository.
func (s *Store) Members() *MemberRepo { return &MemberRepo{db: s.pool} }

// Role returns subject's role in business id; "" when subject is not a
// member or there is no such business.
func (r *MemberRepo) Role(ctx context.Context, businessID, subject string) (core.Role, error) {
	uid, ok := parseUUID(businessID)
	if !ok {
		return "", nil
	}
	var role core.Role
	err := r.db.QueryRow(ctx, `SELECT role FROM business_members WHERE business_id = $1 AND subject = $2`,
		uid, subject).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("role in business %s: %w", businessID, err)
	}
	return role, nil
}

var _ ehr.Practices = (*MemberRepo)(nil)

// BusinessesOf returns the ids of the businesses subject is a member of.
func (r *MemberRepo) BusinessesOf(ctx context.Context, subject string) ([]string, error) {
	rows, _ := r.db.Query(ctx, `SELECT business_id::text FROM business_members WHERE subject = $1 ORDER BY business_id`, subject)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("businesses of a subject: %w", err)
	}
	return ids, nil
}

// BusinessExists reports whether business id exists.
func (r *MemberRepo) BusinessExists(ctx context.Context, id string) (bool, error) {
	uid, ok := parseUUID(id)
	if !ok {
		return false, nil
	}
	var found bool
	if err := r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM businesses WHERE id = $1)`, uid).Scan(&found); err != nil {
		return false, fmt.Errorf("business %s exists: %w", id, err)
	}
	return found, nil
}

// List returns the members of business id, oldest first.
func (r *MemberRepo) List(ctx context.Context, businessID string) ([]business.Member, error) {
	uid, ok := parseUUID(businessID)
	if !ok {
		return nil, nil
	}
	return listMembers(ctx, r.db, uid, businessID)
}

func listMembers(ctx context.Context, db dbtx, uid any, businessID string) ([]business.Member, error) {
	rows, err := db.Query(ctx, `
		SELECT business_id::text, subject, role, created_at FROM business_members
		WHERE business_id = $1 ORDER BY created_at, subject`, uid)
	if err != nil {
		return nil, fmt.Errorf("list members of %s: %w", businessID, err)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Member, error) {
		var m business.Member
		err := row.Scan(&m.BusinessID, &m.Subject, &m.Role, &m.CreatedAt)
		return m, err
	})
	if err != nil {
		return nil, fmt.Errorf("list members of %s: %w", businessID, err)
	}
	return ms, nil
}

// locked runs fn in a transaction that holds business id's row lock, after
// check has allowed the change on the members as they are under that lock:
// changes of one business's members are thereby checked one at a time.
func (r *MemberRepo) locked(ctx context.Context, businessID string, check func([]business.Member) error, fn func(pgx.Tx) error) error {
	uid, ok := parseUUID(businessID)
	if !ok {
		return business.ErrBusinessNotFound
	}
	return pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM businesses WHERE id = $1 FOR UPDATE`, uid).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return business.ErrBusinessNotFound
		}
		if err != nil {
			return fmt.Errorf("lock business %s: %w", businessID, err)
		}
		ms, err := listMembers(ctx, tx, uid, businessID)
		if err != nil {
			return err
		}
		if err := check(ms); err != nil {
			return err
		}
		return memberWriteError(fn(tx))
	})
}

// memberWriteError translates the constraints of business_members.
func memberWriteError(err error) error {
	code, constraint := pgError(err)
	switch {
	case code == sqlUniqueViolation && constraint == "business_members_pkey":
		return business.ErrMemberExists.Wrap(err)
	case code == sqlCheckViolation && constraint == "business_members_last_owner":
		return business.ErrLastOwner.Wrap(err)
	case code == sqlForeignKeyViolation:
		return business.ErrBusinessNotFound.Wrap(err)
	}
	return err
}

// Add stores m, when check allows it under the business's lock, and sets
// its CreatedAt.
func (r *MemberRepo) Add(ctx context.Context, m *business.Member, check func([]business.Member) error) error {
	return r.locked(ctx, m.BusinessID, check, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO business_members (business_id, subject, role) VALUES ($1, $2, $3)
			RETURNING created_at`, m.BusinessID, m.Subject, m.Role).Scan(&m.CreatedAt)
		if err != nil {
			return fmt.Errorf("insert member: %w", err)
		}
		return nil
	})
}

// SetRole gives member subject the role, when check allows it under the
// business's lock.
func (r *MemberRepo) SetRole(ctx context.Context, businessID, subject string, role core.Role, check func([]business.Member) error) (business.Member, error) {
	var m business.Member
	err := r.locked(ctx, businessID, check, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			UPDATE business_members SET role = $3 WHERE business_id = $1 AND subject = $2
			RETURNING business_id::text, subject, role, created_at`, businessID, subject, role).
			Scan(&m.BusinessID, &m.Subject, &m.Role, &m.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return business.ErrMemberNotFound
		}
		if err != nil {
			return fmt.Errorf("update member: %w", err)
		}
		return nil
	})
	if err != nil {
		return business.Member{}, err
	}
	return m, nil
}

// Remove removes member subject, when check allows it under the business's
// lock.
func (r *MemberRepo) Remove(ctx context.Context, businessID, subject string, check func([]business.Member) error) error {
	return r.locked(ctx, businessID, check, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM business_members WHERE business_id = $1 AND subject = $2`, businessID, subject)
		if err != nil {
			return fmt.Errorf("delete member: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return business.ErrMemberNotFound
		}
		return nil
	})
}

// LocationRole returns subject's role in the business of location id, ""
// when subject is not a member; it implements storage.Members.
func (s *Store) LocationRole(ctx context.Context, id int64, subject string) (core.Role, error) {
	var role *core.Role
	err := s.pool.QueryRow(ctx, `
		SELECT m.role
		FROM business_locations l
		LEFT JOIN business_members m ON m.business_id = l.business_id AND m.subject = $2
		WHERE l.id = $1`, id, subject).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", storage.ErrLocationNotFound
	}
	if err != nil {
		return "", fmt.Errorf("role at location %d: %w", id, err)
	}
	if role == nil {
		return "", nil
	}
	return *role, nil
}
