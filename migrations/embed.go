// Package migrations holds the SQL schema migrations, NNNN_name.up.sql,
// applied in order by adapters/postgres.Migrate.
package migrations

import "embed"

// FS holds every migration file.
//
//go:embed *.sql
var FS embed.FS
