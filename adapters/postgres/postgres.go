// Package postgres implements the cores' repositories on PostgreSQL through
// pgx, and applies the schema migrations.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5" // registers the pgx5 scheme
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/carebridge/carebridge/migrations"
)

// dbtx is what repositories need; both the pool and a pgx.Tx satisfy it
// (on a pgx.Tx, Begin opens a savepoint).
type dbtx interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Store is a connection pool to the service's database.
type Store struct {
	pool *pgxpool.Pool
}

// New connects to the database at url and checks that it answers.
// pool_max_lock_conns and pool_lock_wait, the settings of the lock pool of
// earlier versions, are still accepted and ignored: bookings hold no
// connection while the EHR answers (Holds).
func New(ctx context.Context, url string) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(withoutObsoleteParams(url))
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{pool: pool}, nil
}

// withoutObsoleteParams takes the parameters of the lock pool of earlier
// versions out of a URL (pgxpool would send them to the server).
func withoutObsoleteParams(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return raw // a keyword/value string: pgxpool parses it
	}
	q := u.Query()
	if !q.Has("pool_max_lock_conns") && !q.Has("pool_lock_wait") {
		return raw
	}
	q.Del("pool_max_lock_conns")
	q.Del("pool_lock_wait")
	u.RawQuery = q.Encode()
	return u.String()
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Pool is the underlying pool, for tests and benchmarks.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Migrate applies every pending migration of package migrations to the
// database at url. Concurrent callers are serialised by an advisory lock.
func Migrate(url string) error {
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, pgx5URL(url))
	if err != nil {
		return fmt.Errorf("open migrations: %w", err)
	}
	defer m.Close()
	if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// pgx5URL turns a postgres:// URL into the scheme golang-migrate's pgx/v5
// driver registers, without pgxpool's own pool_* parameters, which the
// server would refuse as unknown settings.
func pgx5URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw // golang-migrate reports the bad URL
	}
	if u.Scheme == "postgres" || u.Scheme == "postgresql" {
		u.Scheme = "pgx5"
	}
	q := u.Query()
	for k := range q {
		if strings.HasPrefix(k, "pool_") {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}
