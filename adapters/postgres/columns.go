package postgres

import (
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// A column is one stored column of a row type T, named once with the
// field it holds: what a write sends (the named argument @name) and where
// a read puts it. A table's INSERT, UPDATE and SELECT lists and its scan
// are derived from one list of columns, so a new field is one line there
// and no placeholder is renumbered.
type column[T any] struct {
	name  string
	value func(*T) any // the argument a write sends
	dest  func(*T) any // the scan destination a read fills
}

// textColumn is a NOT NULL text column.
func textColumn[T any](name string, field func(*T) *string) column[T] {
	return column[T]{name,
		func(v *T) any { return *field(v) },
		func(v *T) any { return field(v) }}
}

// optionalText is a nullable text column: "" is stored as NULL, and NULL
// reads as "".
func optionalText[T any](name string, field func(*T) *string) column[T] {
	return column[T]{name,
		func(v *T) any { return nullable(*field(v)) },
		func(v *T) any { return emptyIfNull{field(v)} }}
}

// optionalID is a nullable reference to another row: 0 ("none") is stored
// as NULL, and NULL reads as 0.
func optionalID[T any](name string, field func(*T) *int64) column[T] {
	return column[T]{name,
		func(v *T) any { return nullableID(*field(v)) },
		func(v *T) any { return zeroIfNull{field(v)} }}
}

// columns is the list of a table's columns that its statements share.
type columns[T any] []column[T]

// list is the columns' names, each after prefix (a table alias and dot,
// or ""), for a SELECT or an INSERT.
func (cs columns[T]) list(prefix string) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = prefix + c.name
	}
	return strings.Join(names, ", ")
}

// params is the VALUES list of an INSERT of the columns: @name for each.
func (cs columns[T]) params() string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = "@" + c.name
	}
	return strings.Join(names, ", ")
}

// assignments is the SET list of an UPDATE of the columns: name = @name.
func (cs columns[T]) assignments() string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name + " = @" + c.name
	}
	return strings.Join(names, ", ")
}

// args are the named arguments of a write of v, with the extra ones (a
// key, say) that the statement names beside the columns.
func (cs columns[T]) args(v *T, extra pgx.NamedArgs) pgx.NamedArgs {
	args := make(pgx.NamedArgs, len(cs)+len(extra))
	for _, c := range cs {
		args[c.name] = c.value(v)
	}
	for k, x := range extra {
		args[k] = x
	}
	return args
}

// dests are the scan destinations of a row: head, the columns in v in
// their order, then tail.
func (cs columns[T]) dests(v *T, head []any, tail ...any) []any {
	dest := make([]any, 0, len(head)+len(cs)+len(tail))
	dest = append(dest, head...)
	for _, c := range cs {
		dest = append(dest, c.dest(v))
	}
	return append(dest, tail...)
}

// emptyIfNull scans a nullable text column into a string, NULL as "".
type emptyIfNull struct{ s *string }

func (e emptyIfNull) ScanText(v pgtype.Text) error {
	*e.s = v.String // "" when not Valid
	return nil
}

// zeroIfNull scans a nullable bigint column into an int64, NULL as 0.
type zeroIfNull struct{ n *int64 }

func (z zeroIfNull) ScanInt64(v pgtype.Int8) error {
	*z.n = v.Int64 // 0 when not Valid
	return nil
}
