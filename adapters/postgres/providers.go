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

// Create stores p, affiliated with location locationID, and sets its ID,
// in one transaction. A missing location is business.ErrLocationNotFound
// and leaves no provider behind.
func (r *ProviderRepo) Create(ctx context.Context, p *business.Provider, locationID int64) error {
	var id int64
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `
			INSERT INTO providers (first_name, last_name, email, telehealth_link)
			VALUES ($1, $2, $3, $4)
			RETURNING id`,
			p.FirstName, p.LastName, p.Email, nullable(p.TelehealthLink)).Scan(&id)
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

// ListByLocation returns the providers affiliated with the location by
// last name, first name and id; an unknown location has none.
func (r *ProviderRepo) ListByLocation(ctx context.Context, locationID int64) ([]business.Provider, error) {
	rows, err := r.db.Query(ctx, `
		SELECT p.id, p.first_name, p.last_name, p.email, p.telehealth_link
		FROM providers p JOIN provider_locations pl ON pl.provider_id = p.id
		WHERE pl.location_id = $1
		ORDER BY p.last_name, p.first_name, p.id`, locationID)
	if err != nil {
		return nil, fmt.Errorf("list providers of location %d: %w", locationID, err)
	}
	providers, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Provider, error) {
		var (
			p          business.Provider
			telehealth *string
		)
		if err := row.Scan(&p.ID, &p.FirstName, &p.LastName, &p.Email, &telehealth); err != nil {
			return business.Provider{}, err
		}
		p.TelehealthLink = deref(telehealth)
		return p, nil
	})
	if err != nil {
		return nil, fmt.Errorf("list providers of location %d: %w", locationID, err)
	}
	return providers, nil
}
