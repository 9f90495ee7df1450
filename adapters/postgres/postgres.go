// Package postgres implements the cores' repositories on PostgreSQL through
// pgx, and applies the schema migrations.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

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

// Store is a connection pool to the service's database, and a second,
// small pool that only holds the advisory locks of bookings (see WithLock).
type Store struct {
	pool  *pgxpool.Pool
	locks *pgxpool.Pool
	// lockWait bounds how long WithLock waits for a lock connection and
	// then for the lock itself.
	lockWait time.Duration
}

// The lock pool's settings, as parameters of DATABASE_URL beside pgxpool's
// own pool_* ones (and, like them, never sent to the server).
const (
	// DefaultLockConns is how many bookings may hold an advisory lock at
	// once on one instance (pool_max_lock_conns).
	DefaultLockConns = 4
	// DefaultLockWait is how long a booking waits for its agent's lock
	// before it is answered ehr.ErrAgentBusy (pool_lock_wait, a Go
	// duration).
	DefaultLockWait = 5 * time.Second
)

// New connects to the database at url and checks that it answers. Besides
// the main pool it opens the lock pool: at most pool_max_lock_conns
// (DefaultLockConns) connections, which count on top of the main pool's
// pool_max_conns against the server's max_connections.
func New(ctx context.Context, url string) (*Store, error) {
	url, lockConns, lockWait, err := lockParams(url)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	lockCfg := cfg.Copy()
	lockCfg.MaxConns, lockCfg.MinConns = lockConns, 0
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	locks, err := pgxpool.NewWithConfig(ctx, lockCfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return &Store{pool: pool, locks: locks, lockWait: lockWait}, nil
}

// lockParams takes the lock pool's parameters out of url.
func lockParams(raw string) (rest string, conns int32, wait time.Duration, err error) {
	conns, wait = DefaultLockConns, DefaultLockWait
	u, perr := url.Parse(raw)
	if perr != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return raw, conns, wait, nil // a keyword/value string: pgxpool parses it, defaults apply
	}
	q := u.Query()
	if v := q.Get("pool_max_lock_conns"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 1 {
			return "", 0, 0, fmt.Errorf("parse DATABASE_URL: pool_max_lock_conns %q: must be a whole number, 1 or more", v)
		}
		conns = int32(n)
	}
	if v := q.Get("pool_lock_wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return "", 0, 0, fmt.Errorf("parse DATABASE_URL: pool_lock_wait %q: must be a positive duration such as 5s", v)
		}
		wait = d
	}
	q.Del("pool_max_lock_conns")
	q.Del("pool_lock_wait")
	u.RawQuery = q.Encode()
	return u.String(), conns, wait, nil
}

// Close closes every connection, the lock pool's too.
func (s *Store) Close() {
	s.locks.Close()
	s.pool.Close()
}

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
