// Package pgtest gives each test run a fresh PostgreSQL database, migrated,
// and drops it afterwards.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/adapters/postgres"
)

// DefaultURL is the server the tests use when PGTEST_URL is unset: the
// machine's PostgreSQL with trust authentication.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// New creates a database with a random name on the server of PGTEST_URL
// (or DefaultURL), applies the migrations and returns its URL. The database
// is dropped when the test ends.
func New(t testing.TB) string {
	t.Helper()
	base := os.Getenv("PGTEST_URL")
	if base == "" {
		base = DefaultURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: connect to %s (is PostgreSQL running? make test starts it): %v", base, err)
	}
	defer admin.Close(ctx)

	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cb_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop %s: %v", name, err)
		}
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", base, err)
	}
	u.Path = "/" + name
	dbURL := u.String()
	if err := postgres.Migrate(dbURL); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dbURL
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
