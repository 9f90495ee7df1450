package postgres_test

import (
	"context"
	"testing"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/test/pgtest"
)

// go test -run '^$' -bench AuditSerial ./adapters/postgres: the latency of
// one caller's Record, one at a time, beside the floors of the same pool's
// connection: a SELECT 1 round trip and a bare durable one-row INSERT.
func BenchmarkAuditSerial(b *testing.B) {
	db := pgtest.Store(b)
	ctx := context.Background()
	b.Run("select1", func(b *testing.B) {
		for b.Loop() {
			var one int
			if err := db.Pool().QueryRow(ctx, `SELECT 1`).Scan(&one); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := db.Pool().Exec(ctx, `CREATE TABLE IF NOT EXISTS bench_commit (id bigint GENERATED ALWAYS AS IDENTITY, at timestamptz)`); err != nil {
		b.Fatal(err)
	}
	b.Run("insert", func(b *testing.B) {
		for b.Loop() {
			if _, err := db.Pool().Exec(ctx, `INSERT INTO bench_commit (at) VALUES (now())`); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("record", func(b *testing.B) {
		l, err := db.AuditLog(postgres.AuditConfig{})
		if err != nil {
			b.Fatal(err)
		}
		go l.Run()
		defer l.Close()
		i := 0
		for b.Loop() {
			i++
			if err := l.Record(ctx, auditEvent(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
