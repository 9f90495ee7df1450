package postgres_test

import (
	"strings"
	"testing"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/source/iofs"

	"github.com/carebridge/carebridge/migrations"
	"github.com/carebridge/carebridge/test/pgtest"
)

// migratedTo is a fresh database migrated up to version, for a test of the
// migration after it.
func migratedTo(t *testing.T, version uint) string {
	t.Helper()
	dbURL := pgtest.NewEmpty(t)
	src, err := iofs.New(migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, strings.Replace(dbURL, "postgres://", "pgx5://", 1))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Migrate(version); err != nil {
		t.Fatal(err)
	}
	return dbURL
}
