package postgres

import (
	"context"
	"crypto/rand"
	"fmt"
)

// GeneratedKeyID is the id of the service key kept in the database.
const GeneratedKeyID = "generated"

// serviceKeySize is the size of the generated key in bytes (AES-256).
const serviceKeySize = 32

// ServiceKey returns the service key kept in the database (the fallback
// when SERVICE_KEYS is unset), generating it on first use. Every instance
// gets the same key, even when several start at once on an empty database:
// the first insert wins, the others do nothing, and each then reads the
// winner's key (in a statement of its own, which sees the committed row).
func (s *Store) ServiceKey(ctx context.Context) ([]byte, error) {
	fresh := make([]byte, serviceKeySize)
	_, _ = rand.Read(fresh) // never fails: crypto/rand crashes the program instead
	if _, err := s.pool.Exec(ctx, `INSERT INTO service_keys (id, key) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		GeneratedKeyID, fresh); err != nil {
		return nil, fmt.Errorf("store the generated service key: %w", err)
	}
	var key []byte
	if err := s.pool.QueryRow(ctx, `SELECT key FROM service_keys WHERE id = $1`, GeneratedKeyID).Scan(&key); err != nil {
		return nil, fmt.Errorf("read the generated service key: %w", err)
	}
	return key, nil
}
