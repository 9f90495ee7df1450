package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
)

// LocationRepo keeps business locations; it implements
// business.LocationRepo.
type LocationRepo struct {
	db dbtx
}

// Locations returns the business-location repository.
func (s *Store) Locations() *LocationRepo { return &LocationRepo{db: s.pool} }

// locationColumns are the columns of a location l.
const locationColumns = `l.id, l.business_id::text, l.name, l.timezone, l.npi, l.tax_id,
		l.state_license, l.phone, l.fax, l.email, l.website, l.admin_name, l.admin_first_name,
		l.admin_last_name, l.admin_phone, l.admin_email, l.address, l.city, l.state, l.zip_code,
		l.country, l.suite, l.logo_blob_id, l.created_at, l.updated_at`

// locationSelect reads a location; callers add the WHERE clause.
const locationSelect = `SELECT ` + locationColumns + ` FROM business_locations l`

// scanLocation reads one row of locationSelect, then the columns after
// them into extra; NULL text columns become "" and a NULL logo_blob_id
// becomes 0.
func scanLocation(row pgx.Row, extra ...any) (business.Location, error) {
	var (
		l                                                      business.Location
		timezone, npi, taxID, license, phone, fax, email, site *string
		admin, adminFirst, adminLast, adminPhone, adminEmail   *string
		address, city, state, zip, country, suite              *string
		logo                                                   *int64
	)
	dest := []any{&l.ID, &l.BusinessID, &l.Name, &timezone, &npi, &taxID,
		&license, &phone, &fax, &email, &site, &admin, &adminFirst,
		&adminLast, &adminPhone, &adminEmail, &address, &city, &state, &zip,
		&country, &suite, &logo, &l.CreatedAt, &l.UpdatedAt}
	err := row.Scan(append(dest, extra...)...)
	if err != nil {
		return business.Location{}, err
	}
	l.Timezone, l.NPI, l.TaxID, l.StateLicense = deref(timezone), deref(npi), deref(taxID), deref(license)
	l.Phone, l.Fax, l.Email, l.Website = deref(phone), deref(fax), deref(email), deref(site)
	l.AdminName, l.AdminFirstName, l.AdminLastName = deref(admin), deref(adminFirst), deref(adminLast)
	l.AdminPhone, l.AdminEmail = deref(adminPhone), deref(adminEmail)
	l.Address, l.City, l.State, l.ZipCode = deref(address), deref(city), deref(state), deref(zip)
	l.Country, l.Suite = deref(country), deref(suite)
	if logo != nil {
		l.LogoBlobID = *logo
	}
	return l, nil
}

// nullableID maps the id 0 ("none") to NULL.
func nullableID(id int64) *int64 {
	if id == 0 {
		return nil
	}
	return &id
}

// locationWriteError translates a failed write of location l: a missing
// business or logo blob entry is not found.
func locationWriteError(op string, l *business.Location, err error) error {
	code, constraint := pgError(err)
	if code == sqlForeignKeyViolation {
		switch constraint {
		case "business_locations_business_id_fkey":
			return business.ErrBusinessNotFound.Wrap(err)
		case "business_locations_logo_blob_id_fkey":
			return storage.ErrBlobNotFound.WithMessage("Logo blob entry %d not found", l.LogoBlobID).Wrap(err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// tieLogo records on blob entry blobID that it belongs to location id.
func tieLogo(ctx context.Context, db dbtx, blobID, id int64) error {
	tag, err := db.Exec(ctx, `UPDATE blob_entries SET business_location_id = $2 WHERE id = $1`,
		blobID, strconv.FormatInt(id, 10))
	if err != nil {
		return fmt.Errorf("tie blob entry %d to location %d: %w", blobID, id, err)
	}
	if tag.RowsAffected() == 0 {
		return storage.ErrBlobNotFound.WithMessage("Logo blob entry %d not found", blobID)
	}
	return nil
}

// Create stores l and sets its ID and times. When l.LogoBlobID is set, that
// blob entry is tied to the new location in the same transaction. A
// missing business is business.ErrBusinessNotFound; a missing logo blob
// entry is storage.ErrBlobNotFound.
func (r *LocationRepo) Create(ctx context.Context, l *business.Location) error {
	uid, ok := parseUUID(l.BusinessID)
	if !ok {
		return business.ErrBusinessNotFound
	}
	var (
		id               int64
		created, updated time.Time
	)
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO business_locations (business_id, name, timezone, npi, tax_id, state_license,
				phone, fax, email, website, admin_name, admin_first_name, admin_last_name, admin_phone,
				admin_email, address, city, state, zip_code, country, suite, logo_blob_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
				$18, $19, $20, $21, $22)
			RETURNING id, created_at, updated_at`,
			uid, l.Name, nullable(l.Timezone), nullable(l.NPI), nullable(l.TaxID),
			nullable(l.StateLicense), nullable(l.Phone), nullable(l.Fax), nullable(l.Email),
			nullable(l.Website), nullable(l.AdminName), nullable(l.AdminFirstName),
			nullable(l.AdminLastName), nullable(l.AdminPhone), nullable(l.AdminEmail),
			nullable(l.Address), nullable(l.City), nullable(l.State), nullable(l.ZipCode),
			nullable(l.Country), nullable(l.Suite), nullableID(l.LogoBlobID),
		).Scan(&id, &created, &updated)
		if err != nil {
			return locationWriteError("insert business location", l, err)
		}
		if l.LogoBlobID != 0 {
			return tieLogo(ctx, tx, l.LogoBlobID, id)
		}
		return nil
	})
	if err != nil {
		return err
	}
	l.ID, l.CreatedAt, l.UpdatedAt = id, created, updated
	return nil
}

// Get returns location id; a missing one is
// business.ErrLocationNotFound.
func (r *LocationRepo) Get(ctx context.Context, id int64) (business.Location, error) {
	l, err := scanLocation(r.db.QueryRow(ctx, locationSelect+` WHERE l.id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Location{}, business.ErrLocationNotFound
	}
	if err != nil {
		return business.Location{}, fmt.Errorf("get business location %d: %w", id, err)
	}
	return l, nil
}

// GetWithRole returns location id and subject's role in its business (""
// when subject is not a member) in one statement; a missing location is
// business.ErrLocationNotFound.
func (r *LocationRepo) GetWithRole(ctx context.Context, id int64, subject string) (business.Location, core.Role, error) {
	var role core.Role
	l, err := scanLocation(r.db.QueryRow(ctx, `SELECT `+locationColumns+`, `+roleOf("l.business_id")+`
		FROM business_locations l WHERE l.id = $1`, id, subject), &role)
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Location{}, "", business.ErrLocationNotFound
	}
	if err != nil {
		return business.Location{}, "", fmt.Errorf("get business location %d with a role: %w", id, err)
	}
	return l, role, nil
}

// ListByBusinessForMember returns the business's locations by id when
// subject is a member of it; member is false otherwise (and for a missing
// business). The list and the membership are one statement; only an empty
// list costs a second, to tell a member without locations from a stranger.
func (r *LocationRepo) ListByBusinessForMember(ctx context.Context, businessID, subject string) ([]business.Location, bool, error) {
	uid, ok := parseUUID(businessID)
	if !ok {
		return nil, false, nil
	}
	rows, err := r.db.Query(ctx, locationSelect+` WHERE l.business_id = $1
		AND EXISTS (SELECT 1 FROM business_members m WHERE m.business_id = $1 AND m.subject = $2)
		ORDER BY l.id`, uid, subject)
	if err != nil {
		return nil, false, fmt.Errorf("list locations of business %s: %w", businessID, err)
	}
	locs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Location, error) {
		return scanLocation(row)
	})
	if err != nil {
		return nil, false, fmt.Errorf("list locations of business %s: %w", businessID, err)
	}
	if len(locs) > 0 {
		return locs, true, nil
	}
	var member bool
	err = r.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM business_members WHERE business_id = $1 AND subject = $2)`,
		uid, subject).Scan(&member)
	if err != nil {
		return nil, false, fmt.Errorf("membership in business %s: %w", businessID, err)
	}
	return locs, member, nil
}

// memberOfLocation is true when subject ($2) is a member of the business
// of location $1.
const memberOfLocation = `EXISTS (SELECT 1 FROM business_locations l
	JOIN business_members m ON m.business_id = l.business_id
	WHERE l.id = $1 AND m.subject = $2)`

// isMemberOfLocation reports whether subject is a member of the business
// of location id (false for a missing location).
func isMemberOfLocation(ctx context.Context, db dbtx, id int64, subject string) (bool, error) {
	var member bool
	if err := db.QueryRow(ctx, `SELECT `+memberOfLocation, id, subject).Scan(&member); err != nil {
		return false, fmt.Errorf("membership by location %d: %w", id, err)
	}
	return member, nil
}

// ListByBusiness returns the business's locations by id; an unknown
// business has none.
func (r *LocationRepo) ListByBusiness(ctx context.Context, businessID string) ([]business.Location, error) {
	uid, ok := parseUUID(businessID)
	if !ok {
		return []business.Location{}, nil
	}
	rows, err := r.db.Query(ctx, locationSelect+` WHERE l.business_id = $1 ORDER BY l.id`, uid)
	if err != nil {
		return nil, fmt.Errorf("list locations of business %s: %w", businessID, err)
	}
	locs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Location, error) {
		return scanLocation(row)
	})
	if err != nil {
		return nil, fmt.Errorf("list locations of business %s: %w", businessID, err)
	}
	return locs, nil
}

// Update locks location id, applies fn to it and stores the result, all in
// one transaction; when fn fails nothing is stored and its error is
// returned as is. ID, BusinessID and the times are
// read-only. A changed LogoBlobID is tied to the location as in Create
// (the old blob entry is left to the caller). It returns the row as
// stored.
func (r *LocationRepo) Update(ctx context.Context, id int64, fn func(*business.Location) error) (business.Location, error) {
	var stored business.Location
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		l, err := scanLocation(tx.QueryRow(ctx, locationSelect+` WHERE l.id = $1 FOR UPDATE OF l`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return business.ErrLocationNotFound
		}
		if err != nil {
			return fmt.Errorf("lock business location %d: %w", id, err)
		}
		oldLogo := l.LogoBlobID
		if err := fn(&l); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `
			UPDATE business_locations SET name = $2, timezone = $3, npi = $4, tax_id = $5,
				state_license = $6, phone = $7, fax = $8, email = $9, website = $10, admin_name = $11,
				admin_first_name = $12, admin_last_name = $13, admin_phone = $14, admin_email = $15,
				address = $16, city = $17, state = $18, zip_code = $19, country = $20, suite = $21,
				logo_blob_id = $22
			WHERE id = $1`,
			id, l.Name, nullable(l.Timezone), nullable(l.NPI), nullable(l.TaxID),
			nullable(l.StateLicense), nullable(l.Phone), nullable(l.Fax), nullable(l.Email),
			nullable(l.Website), nullable(l.AdminName), nullable(l.AdminFirstName),
			nullable(l.AdminLastName), nullable(l.AdminPhone), nullable(l.AdminEmail),
			nullable(l.Address), nullable(l.City), nullable(l.State), nullable(l.ZipCode),
			nullable(l.Country), nullable(l.Suite), nullableID(l.LogoBlobID))
		if err != nil {
			return locationWriteError(fmt.Sprintf("update business location %d", id), &l, err)
		}
		if l.LogoBlobID != 0 && l.LogoBlobID != oldLogo {
			if err := tieLogo(ctx, tx, l.LogoBlobID, id); err != nil {
				return err
			}
		}
		stored, err = scanLocation(tx.QueryRow(ctx, locationSelect+` WHERE l.id = $1`, id))
		if err != nil {
			return fmt.Errorf("reread business location %d: %w", id, err)
		}
		return nil
	})
	if err != nil {
		return business.Location{}, err
	}
	return stored, nil
}
