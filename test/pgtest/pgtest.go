// Package pgtest gives each test run a fresh PostgreSQL database, migrated,
// and drops it afterwards.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/test/testenv"
)

// DefaultURL is the server the tests use when PGTEST_URL is unset: the
// machine's PostgreSQL with trust authentication.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// New creates a database with a random name on the server of PGTEST_URL
// (or DefaultURL), applies the migrations and returns its URL. The database
// is dropped when the test ends.
func New(t testing.TB) string {
	t.Helper()
	dbURL := create(t, "")
	if err := postgres.Migrate(dbURL); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
}

// NewEmpty is New without the migrations, for a test that applies them
// itself (a migration's data step over rows of the schema before it).
func NewEmpty(t testing.TB) string {
	t.Helper()
	return create(t, "")
}

// NewWithRole is New for a test that needs the service's own, unprivileged
// role, as in production: it creates a LOGIN role that is not a superuser
// (a random name, returned as role), a fresh database owned by it, and
// applies the migrations as that role, so it owns every table as a service
// that runs its own migrations does. serviceURL connects as the role;
// adminURL connects to the same database as the server's superuser, for
// what the service may not do (REVOKE INSERT ON audit_events FROM <role>,
// bypassing triggers). The database and then the role are dropped when the
// test ends. The server must let the role log in without a password, as
// DefaultURL's trust authentication does.
func NewWithRole(t testing.TB) (adminURL, serviceURL, role string) {
	t.Helper()
	role = randomName("cb_role_")
	if err := exec(serverURL(), "CREATE ROLE "+role+" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE"); err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := exec(serverURL(), "DROP ROLE IF EXISTS "+role); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})

	adminURL = create(t, role)
	u, err := url.Parse(adminURL)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", adminURL, err)
	}
	u.User = url.User(role)
	serviceURL = u.String()
	if err := postgres.Migrate(serviceURL); err != nil {
		t.Fatalf("pgtest: migrate as %s: %v", role, err)
	}
	return adminURL, serviceURL, role
}

// serverURL is the server the tests use.
func serverURL() string {
	if u := os.Getenv("PGTEST_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// create creates an empty database with a random name, owned by owner (the
// connecting superuser when ""), dropped when the test ends, and returns its
// URL on the server's own user.
func create(t testing.TB, owner string) string {
	t.Helper()
	base := serverURL()
	name := randomName("cb_test_")
	stmt := "CREATE DATABASE " + name
	if owner != "" {
		stmt += " OWNER " + owner
	}
	if err := exec(base, stmt); err != nil {
		fail(t, err)
	}
	t.Cleanup(func() {
		if err := exec(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", base, err)
	}
	u.Path = "/" + name
	return u.String()
}

// exec runs one statement on its own connection to the database at dbURL.
func exec(dbURL, stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return &unreachableError{fmt.Errorf("connect to %s: %w", dbURL, err)}
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

// unreachableError is a server that could not be connected to.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string { return e.err.Error() }
func (e *unreachableError) Unwrap() error { return e.err }

// fail ends a test whose set-up statement failed: an unreachable server is
// a missing service (a failure with CI set, a skip without), anything else
// a failure.
func fail(t testing.TB, err error) {
	t.Helper()
	var u *unreachableError
	if errors.As(err, &u) {
		testenv.Missing(t, "PostgreSQL unreachable ("+err.Error()+")", "run make test, which starts it (scripts/ensure-services.sh), or set PGTEST_URL")
	}
	t.Fatalf("pgtest: %v", err)
}

func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Store returns a connected store on a fresh database, closed when the
// test ends.
func Store(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.New(context.Background(), New(t))
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}
