package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestIntegrationBlobRepo_InsertGetDelete(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Blobs()

	plain := storage.Blob{Name: "obj-1", Container: storage.ContainerImages, OriginalFilename: "logo.png",
		ContentType: "image/png", Size: 42, UploadedBy: "alice", SHA256: "ab"}
	if err := repo.Insert(ctx, &plain); err != nil {
		t.Fatal(err)
	}
	if plain.ID <= 0 || plain.CreatedAt.IsZero() || time.Since(plain.CreatedAt) > time.Minute {
		t.Fatalf("insert did not set id and times: %+v", plain)
	}
	got, err := repo.Get(ctx, plain.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "obj-1" || got.Container != storage.ContainerImages || got.KeyID != "" || got.BusinessLocationID != "" ||
		got.PracticeID != "" || got.WrappedKey != nil || got.Size != 42 || !got.CreatedAt.Equal(plain.CreatedAt) {
		t.Fatalf("round trip changed the entry: %+v", got)
	}

	enc := storage.Blob{Name: "obj-2", Container: storage.ContainerUploads, OriginalFilename: "r.pdf",
		ContentType: "application/pdf", Size: 1, Encrypted: true, KeyID: "k1", WrappedKey: []byte{1, 2, 3},
		UploadedBy: "bob", BusinessLocationID: "7", PracticeID: "p", SHA256: "cd"}
	if err := repo.Insert(ctx, &enc); err != nil {
		t.Fatal(err)
	}
	got, err = repo.Get(ctx, enc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Encrypted || got.KeyID != "k1" || string(got.WrappedKey) != "\x01\x02\x03" || got.BusinessLocationID != "7" || got.PracticeID != "p" {
		t.Fatalf("encrypted entry changed: %+v", got)
	}

	if _, err := repo.Delete(ctx, plain.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Get(ctx, plain.ID); !errors.Is(err, storage.ErrBlobNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := repo.Delete(ctx, plain.ID); !errors.Is(err, storage.ErrBlobNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestIntegrationBlobRepo_ConstraintsRefuseBadRows(t *testing.T) {
	ctx := context.Background()
	repo := pgtest.Store(t).Blobs()
	bad := []storage.Blob{
		{Name: "x1", Container: "secrets", OriginalFilename: "a", ContentType: "t", UploadedBy: "a", SHA256: "s"},
		{Name: "x2", Container: "uploads", OriginalFilename: "a", ContentType: "t", UploadedBy: "a", SHA256: "s", Encrypted: true},
		{Name: "x3", Container: "uploads", OriginalFilename: "a", ContentType: "t", UploadedBy: "a", SHA256: "s", Size: -1},
	}
	for _, b := range bad {
		if err := repo.Insert(ctx, &b); err == nil {
			t.Errorf("inserted a bad row %+v", b)
		}
	}
	dup := storage.Blob{Name: "same", Container: "uploads", OriginalFilename: "a", ContentType: "t", UploadedBy: "a", SHA256: "s"}
	if err := repo.Insert(ctx, &dup); err != nil {
		t.Fatal(err)
	}
	if err := repo.Insert(ctx, &dup); err == nil {
		t.Error("two rows share an object name")
	}
}

func TestIntegrationMigrate_IsIdempotent(t *testing.T) {
	url := pgtest.New(t) // already migrated once
	if err := postgresMigrate(url); err != nil {
		t.Fatalf("second migrate: %v", err)
	}
}

func TestIntegrationMigrate_AcceptsPoolParameters(t *testing.T) {
	url := pgtest.New(t) + "&pool_max_conns=8&pool_min_conns=1"
	if err := postgresMigrate(url); err != nil {
		t.Fatalf("migrate with pool parameters: %v", err)
	}
}

func TestIntegrationBlobRepo_KnownAndTheSweepClaim(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Blobs()
	b := &storage.Blob{Name: "known-1", Container: storage.ContainerUploads, OriginalFilename: "a.txt", ContentType: "text/plain", SHA256: "x", UploadedBy: "u"}
	if err := repo.Insert(ctx, b); err != nil {
		t.Fatal(err)
	}
	known, err := repo.Known(ctx, storage.ContainerUploads, []string{"known-1", "unknown"})
	if err != nil || len(known) != 1 || !known["known-1"] {
		t.Fatalf("Known = %v, %v", known, err)
	}
	if other, err := repo.Known(ctx, storage.ContainerImages, []string{"known-1"}); err != nil || len(other) != 0 {
		t.Fatalf("another container's entry counted: %v %v", other, err)
	}

	// While one instance holds the claim, another skips its round.
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan bool)
	go func() {
		ran, err := db.SweepClaim(ctx, func(context.Context) error { close(held); <-release; return nil })
		if err != nil {
			t.Error(err)
		}
		done <- ran
	}()
	<-held
	ran, err := db.SweepClaim(ctx, func(context.Context) error { t.Error("a second sweep ran"); return nil })
	if err != nil || ran {
		t.Fatalf("second claim: ran %v, %v", ran, err)
	}
	close(release)
	if !<-done {
		t.Fatal("the first claim did not run")
	}
	if ran, err := db.SweepClaim(ctx, func(context.Context) error { return nil }); err != nil || !ran {
		t.Fatalf("claim after release: ran %v, %v", ran, err)
	}
}

// A location id stored before ids were read strictly ("+5", "05") names the
// business of location 5, as the access check reads it; a number too large
// for a location id names none, and fails nothing.
func TestIntegrationBlobRepo_LegacyLocationIDsNameTheirBusiness(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Blobs()
	biz := seedBusiness(t, db, "owner-legacy")
	loc := fmt.Sprint(seedLocation(t, db, biz, "Main street").ID)
	for stored, want := range map[string]string{
		loc: biz.ID, "+" + loc: biz.ID, "00" + loc: biz.ID,
		"9223372036854775808": "", "99999999999999999999": "", "-" + loc: "", "+": "",
	} {
		b := storage.Blob{Name: "obj-" + stored, Container: storage.ContainerUploads, OriginalFilename: "a.txt",
			ContentType: "text/plain", Size: 1, UploadedBy: "alice", SHA256: "ab", BusinessLocationID: stored}
		if err := repo.Insert(ctx, &b); err != nil || b.BusinessID != want {
			t.Errorf("insert with location %q: %v, business %q, want %q", stored, err, b.BusinessID, want)
			continue
		}
		if got, err := repo.Get(ctx, b.ID); err != nil || got.BusinessID != want {
			t.Errorf("get with location %q: %v, business %q, want %q", stored, err, got.BusinessID, want)
		}
	}
}
