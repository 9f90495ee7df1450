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

// locationFields are the columns of a location that Create and Update
// write and every read returns, between its id and business and its
// times: a new field of business.Location is one line here.
var locationFields = columns[business.Location]{
	textColumn("name", func(l *business.Location) *string { return &l.Name }),
	optionalText("timezone", func(l *business.Location) *string { return &l.Timezone }),
	optionalText("npi", func(l *business.Location) *string { return &l.NPI }),
	optionalText("tax_id", func(l *business.Location) *string { return &l.TaxID }),
	optionalText("state_license", func(l *business.Location) *string { return &l.StateLicense }),
	optionalText("phone", func(l *business.Location) *string { return &l.Phone }),
	optionalText("fax", func(l *business.Location) *string { return &l.Fax }),
	optionalText("email", func(l *business.Location) *string { return &l.Email }),
	optionalText("website", func(l *business.Location) *string { return &l.Website }),
	optionalText("admin_name", func(l *business.Location) *string { return &l.AdminName }),
	optionalText("admin_first_name", func(l *business.Location) *string { return &l.AdminFirstName }),
	optionalText("admin_last_name", func(l *business.Location) *string { return &l.AdminLastName }),
	optionalText("admin_phone", func(l *business.Location) *string { return &l.AdminPhone }),
	optionalText("admin_email", func(l *business.Location) *string { return &l.AdminEmail }),
	optionalText("address", func(l *business.Location) *string { return &l.Address }),
	optionalText("city", func(l *business.Location) *string { return &l.City }),
	optionalText("state", func(l *business.Location) *string { return &l.State }),
	optionalText("zip_code", func(l *business.Location) *string { return &l.ZipCode }),
	optionalText("country", func(l *business.Location) *string { return &l.Country }),
	optionalText("suite", func(l *business.Location) *string { return &l.Suite }),
	optionalID("logo_blob_id", func(l *business.Location) *int64 { return &l.LogoBlobID }),
}

// The statements of a location, derived from locationFields.
var (
	// locationColumns are the columns of a location l.
	locationColumns = `l.id, l.business_id::text, ` + locationFields.list("l.") + `, l.created_at, l.updated_at`
	// locationSelect reads a location; callers add the WHERE clause.
	locationSelect = `SELECT ` + locationColumns + ` FROM business_locations l`
	locationInsert = `INSERT INTO business_locations (business_id, ` + locationFields.list("") + `)
		VALUES (@business_id, ` + locationFields.params() + `)
		RETURNING id, created_at, updated_at`
	locationUpdate = `UPDATE business_locations SET ` + locationFields.assignments() + ` WHERE id = @id`
)

// scanLocation reads one row of locationSelect, then the columns after
// them into extra; NULL text columns become "" and a NULL logo_blob_id
// becomes 0.
func scanLocation(row pgx.Row, extra ...any) (business.Location, error) {
	var l business.Location
	dest := locationFields.dests(&l, []any{&l.ID, &l.BusinessID}, append([]any{&l.CreatedAt, &l.UpdatedAt}, extra...)...)
	if err := row.Scan(dest...); err != nil {
		return business.Location{}, err
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
		err := tx.QueryRow(ctx, locationInsert, locationFields.args(l, pgx.NamedArgs{"business_id": uid})).
			Scan(&id, &created, &updated)
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
		_, err = tx.Exec(ctx, locationUpdate, locationFields.args(&l, pgx.NamedArgs{"id": id}))
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
