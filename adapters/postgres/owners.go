package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/storage"
)

// LocationOwner returns the owner subject of the business of location id;
// it implements storage.Owners.
func (s *Store) LocationOwner(ctx context.Context, id int64) (string, error) {
	var owner string
	err := s.pool.QueryRow(ctx, `
		SELECT b.owner_subject
		FROM business_locations l JOIN businesses b ON b.id = l.business_id
		WHERE l.id = $1`, id).Scan(&owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", storage.ErrLocationNotFound
	}
	if err != nil {
		return "", fmt.Errorf("owner of location %d: %w", id, err)
	}
	return owner, nil
}
