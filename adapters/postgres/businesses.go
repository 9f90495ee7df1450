package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
)

// Compile-time checks that the repositories implement the business ports.
var (
	_ business.BusinessRepo = (*BusinessRepo)(nil)
	_ business.LocationRepo = (*LocationRepo)(nil)
	_ business.ProviderRepo = (*ProviderRepo)(nil)
	_ business.HoursRepo    = (*HoursRepo)(nil)
)

// SQLSTATE codes translated at the border.
const (
	sqlForeignKeyViolation = "23503"
	sqlUniqueViolation     = "23505"
	sqlCheckViolation      = "23514"
	sqlInvalidDatetime     = "22007"
	sqlDatetimeOverflow    = "22008"
)

// pgError returns the SQLSTATE and constraint name of a PostgreSQL error in
// err's chain, or empty strings for any other error.
func pgError(err error) (code, constraint string) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code, pe.ConstraintName
	}
	return "", ""
}

// parseUUID reads a business id; ok is false when s is not a UUID, which
// no stored business can have.
func parseUUID(s string) (pgtype.UUID, bool) {
	var u pgtype.UUID
	if err := u.Scan(s); err != nil {
		return pgtype.UUID{}, false
	}
	return u, true
}

// BusinessRepo keeps businesses; it implements business.BusinessRepo.
type BusinessRepo struct {
	db dbtx
}

// Businesses returns the business repository.
func (s *Store) Businesses() *BusinessRepo { return &BusinessRepo{db: s.pool} }

// businessFields are the columns of a business that Create and Update
// write and every read returns, between its id and its times: a new field
// of business.Business is one line here.
var businessFields = columns[business.Business]{
	textColumn("owner_subject", func(b *business.Business) *string { return &b.OwnerSubject }),
	textColumn("name", func(b *business.Business) *string { return &b.Name }),
	textColumn("email", func(b *business.Business) *string { return &b.Email }),
	optionalText("npi_license", func(b *business.Business) *string { return &b.NPILicense }),
	optionalText("tax_id", func(b *business.Business) *string { return &b.TaxID }),
	optionalText("website", func(b *business.Business) *string { return &b.Website }),
	optionalText("description", func(b *business.Business) *string { return &b.Description }),
	optionalText("address", func(b *business.Business) *string { return &b.Address }),
	optionalText("city", func(b *business.Business) *string { return &b.City }),
	optionalText("state", func(b *business.Business) *string { return &b.State }),
	optionalText("zip_code", func(b *business.Business) *string { return &b.ZipCode }),
	optionalText("twitter_link", func(b *business.Business) *string { return &b.TwitterLink }),
	optionalText("instagram_link", func(b *business.Business) *string { return &b.InstagramLink }),
	optionalText("youtube_link", func(b *business.Business) *string { return &b.YoutubeLink }),
}

// The statements of a business, derived from businessFields.
var (
	businessColumns = `id::text, ` + businessFields.list("") + `, created_at, updated_at`
	businessInsert  = `INSERT INTO businesses (` + businessFields.list("") + `)
		VALUES (` + businessFields.params() + `)
		RETURNING id::text, created_at, updated_at`
	businessUpdate = `UPDATE businesses SET ` + businessFields.assignments() + `
		WHERE id = @id
		RETURNING ` + businessColumns
)

// scanBusiness reads one row of businessColumns, then the columns after
// them into extra; NULL text columns become "".
func scanBusiness(row pgx.Row, extra ...any) (business.Business, error) {
	var b business.Business
	dest := businessFields.dests(&b, []any{&b.ID}, append([]any{&b.CreatedAt, &b.UpdatedAt}, extra...)...)
	if err := row.Scan(dest...); err != nil {
		return business.Business{}, err
	}
	return b, nil
}

// Create stores b and sets its ID and times; the row's trigger
// (migration 0011) makes b.OwnerSubject its first owner member in the same
// statement. Empty optional fields are stored as NULL.
func (r *BusinessRepo) Create(ctx context.Context, b *business.Business) error {
	err := r.db.QueryRow(ctx, businessInsert, businessFields.args(b, nil)).Scan(&b.ID, &b.CreatedAt, &b.UpdatedAt)
	if err != nil {
		return fmt.Errorf("insert business: %w", err)
	}
	return nil
}

// Get returns business id; a missing one (or an id that is not a UUID) is
// business.ErrBusinessNotFound.
func (r *BusinessRepo) Get(ctx context.Context, id string) (business.Business, error) {
	uid, ok := parseUUID(id)
	if !ok {
		return business.Business{}, business.ErrBusinessNotFound
	}
	b, err := scanBusiness(r.db.QueryRow(ctx, `SELECT `+businessColumns+` FROM businesses WHERE id = $1`, uid))
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Business{}, business.ErrBusinessNotFound
	}
	if err != nil {
		return business.Business{}, fmt.Errorf("get business %s: %w", id, err)
	}
	return b, nil
}

// roleOf is the role of subject ($2) in the business whose id the
// expression names, or the empty string when subject is not a member: one index lookup
// on the members' primary key, inside the statement that reads the row.
func roleOf(businessID string) string {
	return `COALESCE((SELECT m.role FROM business_members m WHERE m.business_id = ` + businessID + ` AND m.subject = $2), '')`
}

// GetWithRole returns business id and subject's role in it ("" when
// subject is not a member) in one statement; a missing business is
// business.ErrBusinessNotFound.
func (r *BusinessRepo) GetWithRole(ctx context.Context, id, subject string) (business.Business, core.Role, error) {
	uid, ok := parseUUID(id)
	if !ok {
		return business.Business{}, "", business.ErrBusinessNotFound
	}
	var role core.Role
	b, err := scanBusiness(r.db.QueryRow(ctx, `SELECT `+businessColumns+`, `+roleOf("businesses.id")+`
		FROM businesses WHERE id = $1`, uid, subject), &role)
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Business{}, "", business.ErrBusinessNotFound
	}
	if err != nil {
		return business.Business{}, "", fmt.Errorf("get business %s with a role: %w", id, err)
	}
	return b, role, nil
}

// Update locks business id, applies fn to it and stores the result, all in
// one transaction; when fn fails nothing is stored and its error is
// returned as is. Every field but ID and the times is stored. It returns
// the row as stored.
func (r *BusinessRepo) Update(ctx context.Context, id string, fn func(*business.Business) error) (business.Business, error) {
	uid, ok := parseUUID(id)
	if !ok {
		return business.Business{}, business.ErrBusinessNotFound
	}
	var stored business.Business
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		b, err := scanBusiness(tx.QueryRow(ctx, `SELECT `+businessColumns+` FROM businesses WHERE id = $1 FOR UPDATE`, uid))
		if errors.Is(err, pgx.ErrNoRows) {
			return business.ErrBusinessNotFound
		}
		if err != nil {
			return fmt.Errorf("lock business %s: %w", id, err)
		}
		if err := fn(&b); err != nil {
			return err
		}
		stored, err = scanBusiness(tx.QueryRow(ctx, businessUpdate, businessFields.args(&b, pgx.NamedArgs{"id": uid})))
		if err != nil {
			return fmt.Errorf("update business %s: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return business.Business{}, err
	}
	return stored, nil
}
