package postgres_test

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/test/pgtest"
)

// The tests of this file read the fields of the stored types by
// reflection, so a field added to business.Business or business.Location
// is round-tripped (and its NULL checked) without a line here: a field
// the store forgets to write or read fails them.

// stringFields are the names of v's string fields but those in skip.
func stringFields(v any, skip ...string) []string {
	var names []string
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Type.Kind() == reflect.String && !slices.Contains(skip, f.Name) {
			names = append(names, f.Name)
		}
	}
	return names
}

// set is v with its string field name set to value.
func set[T any](v T, name, value string) T {
	reflect.ValueOf(&v).Elem().FieldByName(name).SetString(value)
	return v
}

// zeroFields counts v's fields that are zero, but ID and the times: the
// columns a row of v must hold as NULL.
func zeroFields(v any) int {
	n := 0
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		switch rv.Type().Field(i).Name {
		case "ID", "CreatedAt", "UpdatedAt":
			continue
		}
		if rv.Field(i).IsZero() {
			n++
		}
	}
	return n
}

// nullColumns counts the NULL columns of the row of table whose id is id.
func nullColumns(t *testing.T, db *postgres.Store, table string, id any) int {
	t.Helper()
	var n int
	err := db.Pool().QueryRow(context.Background(), `
		SELECT count(*) FROM `+table+` r, jsonb_each(to_jsonb(r)) e
		WHERE r.id = $1 AND e.value = 'null'::jsonb`, id).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// repo is what roundTripEachField needs of a repository of T.
type repo[T any] struct {
	table  string
	create func(*T) error
	get    func(T) (T, error)
	update func(T, func(*T) error) (T, error)
	id     func(T) any
	same   func(a, b T) bool
}

// roundTripEachField stores base (its required fields) and checks that
// every empty field is a NULL column; then, for each string field of T
// but skip, it creates base with that field alone set, reads it back, and
// updates the field, checking what the store answers each time.
func roundTripEachField[T any](t *testing.T, db *postgres.Store, r repo[T], base T, skip ...string) {
	t.Helper()
	minimal := base
	if err := r.create(&minimal); err != nil {
		t.Fatal(err)
	}
	if got, want := nullColumns(t, db, r.table, r.id(minimal)), zeroFields(minimal); got != want {
		t.Errorf("a row of the required fields has %d NULL columns, want %d (one per empty field)", got, want)
	}
	for _, name := range stringFields(base, skip...) {
		v := set(base, name, "created "+name)
		if err := r.create(&v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, err := r.get(v); err != nil || !r.same(got, v) {
			t.Errorf("%s: create and get = %+v, %v; want %+v", name, got, err, v)
		}
		stored, err := r.update(v, func(u *T) error {
			*u = set(*u, name, "updated "+name)
			return nil
		})
		if want := set(v, name, "updated "+name); err != nil || !r.same(stored, want) {
			t.Errorf("%s: update = %+v, %v; want %+v", name, stored, err, want)
		}
	}
}

func TestIntegrationBusinessRepo_RoundTripsEachFieldAlone(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	bs := db.Businesses()
	roundTripEachField(t, db, repo[business.Business]{
		table:  "businesses",
		create: func(b *business.Business) error { return bs.Create(ctx, b) },
		get:    func(b business.Business) (business.Business, error) { return bs.Get(ctx, b.ID) },
		update: func(b business.Business, fn func(*business.Business) error) (business.Business, error) {
			return bs.Update(ctx, b.ID, fn)
		},
		id:   func(b business.Business) any { return b.ID },
		same: sameBusiness,
	}, business.Business{OwnerSubject: "owner-1", Name: "Bare", Email: "bare@example.com"}, "ID")
}

func TestIntegrationLocationRepo_RoundTripsEachFieldAlone(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	ls := db.Locations()
	roundTripEachField(t, db, repo[business.Location]{
		table:  "business_locations",
		create: func(l *business.Location) error { return ls.Create(ctx, l) },
		get:    func(l business.Location) (business.Location, error) { return ls.Get(ctx, l.ID) },
		update: func(l business.Location, fn func(*business.Location) error) (business.Location, error) {
			return ls.Update(ctx, l.ID, fn)
		},
		id:   func(l business.Location) any { return l.ID },
		same: sameLocation,
	}, business.Location{BusinessID: seedBusiness(t, db, "owner-1").ID, Name: "Bare"}, "BusinessID")
}
