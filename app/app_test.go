package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"

	"github.com/carebridge/carebridge/adapters/ehr/ehrkinds"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/pgtest"
	"github.com/carebridge/carebridge/test/testenv"
)

// New builds the database pool, the object store, Redis, an EHR link and
// the audit writer before it listens; when listening fails, each of them
// is released again: no connection to PostgreSQL or Redis, no file and no
// goroutine is left behind.
func TestIntegrationNew_ClosesWhatItBuiltWhenALaterStepFails(t *testing.T) {
	dbURL := pgtest.New(t)
	redisURL, clientName := redisTestURL(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ehrs, err := ehrkinds.All().Parse([]byte(`ehr_systems:
  - name: bot
    adapter: wsbot
    base_url: ws://127.0.0.1:9/ws
    timeout: 1000
`), nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg := app.Config{
		HTTPAddr:       "127.0.0.1:-1", // refused by net.Listen, the last step
		DatabaseURL:    dbURL,
		Objects:        app.ObjectStore{Dir: t.TempDir()},
		MaxUploadBytes: 1 << 20,
		DevKey:         key,
		OIDCAudience:   "carebridge",
		EHR:            ehrs,
		RedisURL:       redisURL,
	}

	goroutines, fds := runtime.NumGoroutine(), openFiles(t)
	a, err := app.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil {
		a.Close()
		t.Fatal("New with an invalid HTTP_ADDR succeeded")
	}
	if !strings.Contains(err.Error(), "HTTP_ADDR") {
		t.Fatalf("New failed before its last step: %v", err)
	}

	// The pool, the audit writer and Redis stop their goroutines and
	// close their sockets; the object store closes its root directory.
	// Then PostgreSQL and Redis see those connections gone, a moment later
	// (a backend leaves pg_stat_activity as it exits). Each wait bounds a
	// failing run only.
	waitUntil(t, "goroutines and open files as before New", func() string {
		if g, f := runtime.NumGoroutine(), openFiles(t); g > goroutines || f > fds {
			return fmt.Sprintf("%d goroutines (%d before), %d open files (%d before)", g, goroutines, f, fds)
		}
		return ""
	})
	waitUntil(t, "no connection of the app in PostgreSQL or Redis", func() string {
		if n := pgConnections(t, dbURL); n != 0 {
			return fmt.Sprintf("%d connections to the database are left open", n)
		}
		if list := redisClients(t, redisURL); strings.Contains(list, "name="+clientName+" ") {
			return "a Redis connection of the app is left open:\n" + list
		}
		return ""
	})
}

// waitUntil polls left until it reports nothing left ("") and fails the
// test with what it reports after 5 s.
func waitUntil(t *testing.T, what string, left func() string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for l := left(); l != ""; l = left() {
		if time.Now().After(deadline) {
			t.Fatalf("after New failed, not %s: %s", what, l)
		}
		time.Sleep(10 * time.Millisecond) // polling what other processes and the runtime report
	}
}

// redisTestURL is the test Redis server's URL with a client name of its
// own, so its connections can be told apart; an unreachable Redis skips
// the test, or fails it when CI is set.
func redisTestURL(t *testing.T) (string, string) {
	t.Helper()
	raw := os.Getenv("REDISTEST_URL")
	if raw == "" {
		raw = "redis://127.0.0.1:6379/0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := redisClient(t, raw).Ping(ctx).Err(); err != nil {
		testenv.Missing(t, fmt.Sprintf("Redis at %s unreachable (%v)", raw, err), "run make test, which starts it (scripts/ensure-services.sh)")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cb-app-test-" + hex.EncodeToString(b[:])
	q := u.Query()
	q.Set("client_name", name)
	u.RawQuery = q.Encode()
	return u.String(), name
}

func redisClient(t *testing.T, raw string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	opts.ClientName = ""
	c := goredis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisClients is Redis's CLIENT LIST: one line per connection.
func redisClients(t *testing.T, raw string) string {
	t.Helper()
	c := redisClient(t, raw)
	defer c.Close() // now: the test polls it
	list, err := c.ClientList(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// pgConnections counts the connections to the database of dbURL.
func pgConnections(t *testing.T, dbURL string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	u.Path = "/postgres"
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = $1`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// openFiles counts the process's open file descriptors (Linux).
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("cannot count open files: %v", err)
	}
	return len(fds)
}
