package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/test/pgtest"
)

// seedBusiness creates a business owned by owner with only the required
// fields.
func seedBusiness(t *testing.T, db *postgres.Store, owner string) business.Business {
	t.Helper()
	b := business.Business{OwnerSubject: owner, Name: "Clinic of " + owner, Email: owner + "@example.com"}
	if err := db.Businesses().Create(context.Background(), &b); err != nil {
		t.Fatalf("seed business: %v", err)
	}
	return b
}

func fullBusiness() business.Business {
	return business.Business{
		OwnerSubject: "owner-1", Name: "Sunrise Clinic", Email: "front@sunrise.example", NPILicense: "1234567893",
		TaxID: "12-3456789", Website: "https://sunrise.example", Description: "Family medicine",
		Address: "1 Main St", City: "Springfield", State: "IL", ZipCode: "62701",
		TwitterLink: "https://twitter.com/sunrise", InstagramLink: "https://instagram.com/sunrise",
		YoutubeLink: "https://youtube.com/@sunrise",
	}
}

// sameBusiness compares every field but the times.
func sameBusiness(a, b business.Business) bool {
	a.CreatedAt, a.UpdatedAt, b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func TestIntegrationBusinessRepo_RoundTripsEveryField(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Businesses()

	full := fullBusiness()
	if err := repo.Create(ctx, &full); err != nil {
		t.Fatal(err)
	}
	if len(full.ID) != 36 || full.CreatedAt.IsZero() || time.Since(full.CreatedAt) > time.Minute || !full.UpdatedAt.Equal(full.CreatedAt) {
		t.Fatalf("create did not set id and times: %+v", full)
	}
	got, err := repo.Get(ctx, full.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBusiness(got, full) || !got.CreatedAt.Equal(full.CreatedAt) {
		t.Fatalf("round trip changed the business:\n got %+v\nwant %+v", got, full)
	}

	minimal := business.Business{OwnerSubject: "owner-2", Name: "Bare", Email: "bare@example.com"}
	if err := repo.Create(ctx, &minimal); err != nil {
		t.Fatal(err)
	}
	got, err = repo.Get(ctx, minimal.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !sameBusiness(got, minimal) {
		t.Fatalf("round trip changed the minimal business: %+v", got)
	}
	var allNull bool
	err = db.Pool().QueryRow(ctx, `
		SELECT num_nulls(npi_license, tax_id, website, description, address, city, state, zip_code,
			twitter_link, instagram_link, youtube_link) = 11
		FROM businesses WHERE id = $1`, minimal.ID).Scan(&allNull)
	if err != nil || !allNull {
		t.Fatalf("empty optional fields are not stored as NULL: %v, %v", allNull, err)
	}
}

func TestIntegrationBusinessRepo_GetMissing(t *testing.T) {
	repo := pgtest.Store(t).Businesses()
	for _, id := range []string{"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "not-a-uuid", ""} {
		if _, err := repo.Get(context.Background(), id); !errors.Is(err, business.ErrBusinessNotFound) {
			t.Errorf("get %q: %v", id, err)
		}
	}
}

func TestIntegrationBusinessRepo_UpdateStoresWhatFnLeaves(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Businesses()
	b := fullBusiness()
	if err := repo.Create(ctx, &b); err != nil {
		t.Fatal(err)
	}

	stored, err := repo.Update(ctx, b.ID, func(x *business.Business) error {
		if !sameBusiness(*x, b) {
			t.Errorf("fn saw %+v, want %+v", *x, b)
		}
		x.Name, x.Website, x.YoutubeLink = "Sunset Clinic", "", ""
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := b
	want.Name, want.Website, want.YoutubeLink = "Sunset Clinic", "", ""
	if !sameBusiness(stored, want) || !stored.CreatedAt.Equal(b.CreatedAt) || stored.UpdatedAt.Before(b.UpdatedAt) {
		t.Fatalf("update returned %+v, want %+v", stored, want)
	}
	got, err := repo.Get(ctx, b.ID)
	if err != nil || !sameBusiness(got, want) {
		t.Fatalf("stored %+v, %v; want %+v", got, err, want)
	}
	var nulls int
	if err := db.Pool().QueryRow(ctx, `SELECT num_nulls(website, youtube_link) FROM businesses WHERE id = $1`, b.ID).Scan(&nulls); err != nil || nulls != 2 {
		t.Fatalf("cleared fields are not NULL: %d, %v", nulls, err)
	}
}

func TestIntegrationBusinessRepo_UpdateFnErrorStoresNothing(t *testing.T) {
	ctx := context.Background()
	repo := pgtest.Store(t).Businesses()
	b := fullBusiness()
	if err := repo.Create(ctx, &b); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	_, err := repo.Update(ctx, b.ID, func(x *business.Business) error {
		x.Name = "Changed"
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
	got, err := repo.Get(ctx, b.ID)
	if err != nil || got.Name != b.Name || !got.UpdatedAt.Equal(b.UpdatedAt) {
		t.Fatalf("a failed fn changed the row: %+v, %v", got, err)
	}
}

func TestIntegrationBusinessRepo_UpdateMissing(t *testing.T) {
	repo := pgtest.Store(t).Businesses()
	for _, id := range []string{"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "nope"} {
		_, err := repo.Update(context.Background(), id, func(*business.Business) error {
			t.Error("fn called for a missing business")
			return nil
		})
		if !errors.Is(err, business.ErrBusinessNotFound) {
			t.Errorf("update %q: %v", id, err)
		}
	}
}

// Concurrent read-modify-write cycles do not lose updates: the row lock
// serialises them.
func TestIntegrationBusinessRepo_UpdateSerialisesConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	const writers = 8
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			_, err := db.Businesses().Update(ctx, b.ID, func(x *business.Business) error {
				x.Description += "x"
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := db.Businesses().Get(ctx, b.ID)
	if err != nil || len(got.Description) != writers {
		t.Fatalf("description %q after %d writers (%v)", got.Description, writers, err)
	}
}
