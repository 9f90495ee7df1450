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

const businessColumns = `id::text, owner_subject, name, email, npi_license, tax_id, website,
	description, address, city, state, zip_code, twitter_link, instagram_link, youtube_link,
	created_at, updated_at`

// scanBusiness reads one row of businessColumns, then the columns after
// them into extra; NULL text columns become "".
func scanBusiness(row pgx.Row, extra ...any) (business.Business, error) {
	var (
		b                                                      business.Business
		npi, taxID, website, description, address, city, state *string
		zip, twitter, instagram, youtube                       *string
	)
	dest := []any{&b.ID, &b.OwnerSubject, &b.Name, &b.Email, &npi, &taxID, &website,
		&description, &address, &city, &state, &zip, &twitter, &instagram, &youtube,
		&b.CreatedAt, &b.UpdatedAt}
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return business.Business{}, err
	}
	b.NPILicense, b.TaxID, b.Website, b.Description = deref(npi), deref(taxID), deref(website), deref(description)
	b.Address, b.City, b.State, b.ZipCode = deref(address), deref(city), deref(state), deref(zip)
	b.TwitterLink, b.InstagramLink, b.YoutubeLink = deref(twitter), deref(instagram), deref(youtube)
	return b, nil
}

// Create stores b and sets its ID and times; the row's trigger
// (migration 0011) makes b.OwnerSubject its first owner member in the same
// statement. Empty optional fields are stored as NULL.
func (r *BusinessRepo) Create(ctx context.Context, b *business.Business) error {
	err := r.db.QueryRow(ctx, `
		INSERT INTO businesses (owner_subject, name, email, npi_license, tax_id, website,
			description, address, city, state, zip_code, twitter_link, instagram_link, youtube_link)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
		RETURNING id::text, created_at, updated_at`,
		b.OwnerSubject, b.Name, b.Email, nullable(b.NPILicense), nullable(b.TaxID), nullable(b.Website),
		nullable(b.Description), nullable(b.Address), nullable(b.City), nullable(b.State),
		nullable(b.ZipCode), nullable(b.TwitterLink), nullable(b.InstagramLink), nullable(b.YoutubeLink),
	).Scan(&b.ID, &b.CreatedAt, &b.UpdatedAt)
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
		stored, err = scanBusiness(tx.QueryRow(ctx, `
			UPDATE businesses SET owner_subject = $2, name = $3, email = $4, npi_license = $5,
				tax_id = $6, website = $7, description = $8, address = $9, city = $10, state = $11,
				zip_code = $12, twitter_link = $13, instagram_link = $14, youtube_link = $15
			WHERE id = $1
			RETURNING `+businessColumns,
			uid, b.OwnerSubject, b.Name, b.Email, nullable(b.NPILicense), nullable(b.TaxID),
			nullable(b.Website), nullable(b.Description), nullable(b.Address), nullable(b.City),
			nullable(b.State), nullable(b.ZipCode), nullable(b.TwitterLink), nullable(b.InstagramLink),
			nullable(b.YoutubeLink)))
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
