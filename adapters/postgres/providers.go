package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/business"
)

// ProviderRepo keeps providers and their affiliations with locations; it
// implements business.ProviderRepo.
type ProviderRepo struct {
	db dbtx
}

// Providers returns the provider repository.
func (s *Store) Providers() *ProviderRepo { return &ProviderRepo{db: s.pool} }

// providerFields are the columns of a provider that Create writes and the
// listings read, after its id: a new field of business.Provider is one
// line here.
var providerFields = columns[business.Provider]{
	textColumn("first_name", func(p *business.Provider) *string { return &p.FirstName }),
	textColumn("last_name", func(p *business.Provider) *string { return &p.LastName }),
	textColumn("email", func(p *business.Provider) *string { return &p.Email }),
	optionalText("telehealth_link", func(p *business.Provider) *string { return &p.TelehealthLink }),
}

// The statements of a provider, derived from providerFields.
var (
	providerInsert = `INSERT INTO providers (` + providerFields.list("") + `)
		VALUES (` + providerFields.params() + `)
		RETURNING id`
	// providerSelect reads the providers of location $1; callers may add
	// a condition after AND, and the ORDER BY.
	providerSelect = `SELECT p.id, ` + providerFields.list("p.") + `
		FROM providers p JOIN provider_locations pl ON pl.provider_id = p.id
		WHERE pl.location_id = $1`
)

// Create stores p, affiliated with location locationID, and sets its ID,
// in one transaction. A missing location is business.ErrLocationNotFound
// and leaves no provider behind.
func (r *ProviderRepo) Create(ctx context.Context, p *business.Provider, locationID int64) error {
	var id int64
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, providerInsert, providerFields.args(p, nil)).Scan(&id)
		if err != nil {
			return fmt.Errorf("insert provider: %w", err)
		}
		_, err = tx.Exec(ctx, `INSERT INTO provider_locations (provider_id, location_id) VALUES ($1, $2)`,
			id, locationID)
		if code, _ := pgError(err); code == sqlForeignKeyViolation {
			return business.ErrLocationNotFound.Wrap(err)
		}
		if err != nil {
			return fmt.Errorf("affiliate provider %d with location %d: %w", id, locationID, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	p.ID = id
	return nil
}

// providerOrder is the order of a location's providers.
const providerOrder = ` ORDER BY p.last_name, p.first_name, p.id`

// ListByLocation returns the providers affiliated with the location by
// last name, first name and id; an unknown location has none.
func (r *ProviderRepo) ListByLocation(ctx context.Context, locationID int64) ([]business.Provider, error) {
	rows, err := r.db.Query(ctx, providerSelect+providerOrder, locationID)
	return collectProviders(rows, err, locationID)
}

// ListByLocationForMember returns the providers of the location, in the
// order of ListByLocation, when subject is a member of the location's
// business; member is false otherwise (and for a missing location). The
// list and the membership are one statement; only an empty list costs a
// second.
func (r *ProviderRepo) ListByLocationForMember(ctx context.Context, locationID int64, subject string) ([]business.Provider, bool, error) {
	rows, err := r.db.Query(ctx, providerSelect+` AND `+memberOfLocation+providerOrder, locationID, subject)
	providers, err := collectProviders(rows, err, locationID)
	if err != nil {
		return nil, false, err
	}
	if len(providers) > 0 {
		return providers, true, nil
	}
	member, err := isMemberOfLocation(ctx, r.db, locationID, subject)
	return providers, member, err
}

// collectProviders reads the rows of providerSelect.
func collectProviders(rows pgx.Rows, err error, locationID int64) ([]business.Provider, error) {
	if err != nil {
		return nil, fmt.Errorf("list providers of location %d: %w", locationID, err)
	}
	providers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Provider, error) {
		var p business.Provider
		if err := row.Scan(providerFields.dests(&p, []any{&p.ID})...); err != nil {
			return business.Provider{}, err
		}
		return p, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list providers of location %d: %w", locationID, err)
	}
	return providers, nil
}
