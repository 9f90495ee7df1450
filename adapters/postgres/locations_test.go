package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/pgtest"
)

// seedLocation creates a location named name, with only the required
// fields, for business b.
func seedLocation(t *testing.T, db *postgres.Store, b business.Business, name string) business.Location {
	t.Helper()
	l := business.Location{BusinessID: b.ID, Name: name}
	if err := db.Locations().Create(context.Background(), &l); err != nil {
		t.Fatalf("seed location: %v", err)
	}
	return l
}

// seedLogo inserts a blob entry in container images.
func seedLogo(t *testing.T, db *postgres.Store, name string) int64 {
	t.Helper()
	blob := storage.Blob{Name: name, Container: storage.ContainerImages, OriginalFilename: name + ".png",
		ContentType: "image/png", Size: 10, UploadedBy: "owner-1", SHA256: "00"}
	if err := db.Blobs().Insert(context.Background(), &blob); err != nil {
		t.Fatalf("seed logo: %v", err)
	}
	return blob.ID
}

// blobLocation returns blob_entries.business_location_id of blob id, "" for NULL.
func blobLocation(t *testing.T, db *postgres.Store, id int64) string {
	t.Helper()
	b, err := db.Blobs().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return b.BusinessLocationID
}

func fullLocation(businessID string, logo int64) business.Location {
	return business.Location{
		BusinessID: businessID, Name: "Downtown", Timezone: "America/Chicago", NPI: "1234567893",
		TaxID: "12-3456789", StateLicense: "IL-42", Phone: "+1 312 555 0100", Fax: "+1 312 555 0101",
		Email: "downtown@example.com", Website: "https://downtown.example", AdminName: "Dr. Jane Q. Doe MD",
		AdminFirstName: "Jane", AdminLastName: "Doe", AdminPhone: "312-555-0102", AdminEmail: "jane@example.com",
		Address: "2 State St", City: "Chicago", State: "IL", ZipCode: "60601-1234", Country: "US",
		Suite: "Suite 300", LogoBlobID: logo,
	}
}

// sameLocation compares every field but the times.
func sameLocation(a, b business.Location) bool {
	a.CreatedAt, a.UpdatedAt, b.CreatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

func TestIntegrationLocationRepo_RoundTripsEveryFieldAndTiesTheLogo(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	b := seedBusiness(t, db, "owner-1")
	logo := seedLogo(t, db, "logo-1")

	l := fullLocation(b.ID, logo)
	if err := repo.Create(ctx, &l); err != nil {
		t.Fatal(err)
	}
	if l.ID <= 0 || l.CreatedAt.IsZero() || time.Since(l.CreatedAt) > time.Minute || l.UpdatedAt.IsZero() {
		t.Fatalf("create did not set id and times: %+v", l)
	}
	if got := blobLocation(t, db, logo); got != fmt.Sprint(l.ID) {
		t.Fatalf("logo blob tied to location %q, want %d", got, l.ID)
	}
	got, err := repo.Get(ctx, l.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := l
	if !sameLocation(got, want) || !got.CreatedAt.Equal(l.CreatedAt) {
		t.Fatalf("round trip changed the location:\n got %+v\nwant %+v", got, want)
	}

	minimal := business.Location{BusinessID: b.ID, Name: "Annex"}
	if err := repo.Create(ctx, &minimal); err != nil {
		t.Fatal(err)
	}
	got, err = repo.Get(ctx, minimal.ID)
	if err != nil {
		t.Fatal(err)
	}
	want = minimal
	if !sameLocation(got, want) || got.LogoBlobID != 0 {
		t.Fatalf("round trip changed the minimal location: %+v", got)
	}
	var nulls int
	err = db.Pool().QueryRow(ctx, `
		SELECT num_nulls(timezone, npi, tax_id, state_license, phone, fax, email, website, admin_name,
			admin_first_name, admin_last_name, admin_phone, admin_email, address, city, state, zip_code,
			country, suite, logo_blob_id)
		FROM business_locations WHERE id = $1`, minimal.ID).Scan(&nulls)
	if err != nil || nulls != 20 {
		t.Fatalf("empty optional fields: %d NULLs of 20 (%v)", nulls, err)
	}
}

func TestIntegrationLocationRepo_CreateRefusesMissingReferences(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	b := seedBusiness(t, db, "owner-1")

	for _, id := range []string{"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "nope"} {
		l := business.Location{BusinessID: id, Name: "X"}
		if err := repo.Create(ctx, &l); !errors.Is(err, business.ErrBusinessNotFound) || l.ID != 0 {
			t.Errorf("business %q: %v, id %d", id, err, l.ID)
		}
	}
	l := business.Location{BusinessID: b.ID, Name: "X", LogoBlobID: 999}
	if err := repo.Create(ctx, &l); !errors.Is(err, storage.ErrBlobNotFound) || l.ID != 0 {
		t.Errorf("missing logo: %v, id %d", err, l.ID)
	}
	if locs, err := repo.ListByBusiness(ctx, b.ID); err != nil || len(locs) != 0 {
		t.Fatalf("a failed create left %d locations (%v)", len(locs), err)
	}
}

func TestIntegrationLocationRepo_GetMissing(t *testing.T) {
	if _, err := pgtest.Store(t).Locations().Get(context.Background(), 12345); !errors.Is(err, business.ErrLocationNotFound) {
		t.Fatalf("got %v", err)
	}
}

func TestIntegrationLocationRepo_ListByBusinessOrdersByID(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	b1, b2 := seedBusiness(t, db, "owner-1"), seedBusiness(t, db, "owner-2")
	var want []int64
	for i := range 3 {
		want = append(want, seedLocation(t, db, b1, fmt.Sprintf("L%d", 3-i)).ID)
		seedLocation(t, db, b2, "other")
	}
	locs, err := repo.ListByBusiness(ctx, b1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(locs) != len(want) {
		t.Fatalf("got %d locations, want %d", len(locs), len(want))
	}
	for i, l := range locs {
		if l.ID != want[i] || l.BusinessID != b1.ID {
			t.Errorf("location %d: %+v, want id %d of %s", i, l, want[i], b1.ID)
		}
	}
	for _, id := range []string{"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "nope"} {
		if locs, err := repo.ListByBusiness(ctx, id); err != nil || locs == nil || len(locs) != 0 {
			t.Errorf("unknown business %q: %v, %v", id, locs, err)
		}
	}
}

func TestIntegrationLocationRepo_UpdateStoresFieldsAndTiesTheNewLogo(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	b := seedBusiness(t, db, "owner-1")
	oldLogo, newLogo := seedLogo(t, db, "logo-old"), seedLogo(t, db, "logo-new")
	l := fullLocation(b.ID, oldLogo)
	if err := repo.Create(ctx, &l); err != nil {
		t.Fatal(err)
	}

	stored, err := repo.Update(ctx, l.ID, func(x *business.Location) error {
		if x.LogoBlobID != oldLogo || x.Suite != "Suite 300" {
			t.Errorf("fn saw %+v", *x)
		}
		x.Name, x.Suite, x.Fax, x.LogoBlobID = "Uptown", "", "", newLogo
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := l
	want.Name, want.Suite, want.Fax, want.LogoBlobID = "Uptown", "", "", newLogo
	if !sameLocation(stored, want) || !stored.CreatedAt.Equal(l.CreatedAt) || stored.UpdatedAt.Before(l.UpdatedAt) {
		t.Fatalf("update returned\n %+v\nwant %+v", stored, want)
	}
	if got, err := repo.Get(ctx, l.ID); err != nil || !sameLocation(got, want) {
		t.Fatalf("stored %+v, %v", got, err)
	}
	if got := blobLocation(t, db, newLogo); got != fmt.Sprint(l.ID) {
		t.Fatalf("new logo tied to %q, want %d", got, l.ID)
	}

	// Dropping the logo stores NULL.
	stored, err = repo.Update(ctx, l.ID, func(x *business.Location) error { x.LogoBlobID = 0; return nil })
	if err != nil || stored.LogoBlobID != 0 {
		t.Fatalf("drop logo: %+v, %v", stored, err)
	}
}

func TestIntegrationLocationRepo_UpdateFnErrorStoresNothing(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	b := seedBusiness(t, db, "owner-1")
	l := seedLocation(t, db, b, "Main")
	logo := seedLogo(t, db, "logo")
	boom := errors.New("boom")
	_, err := repo.Update(ctx, l.ID, func(x *business.Location) error {
		x.Name, x.LogoBlobID = "Changed", logo
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want fn's error", err)
	}
	got, err := repo.Get(ctx, l.ID)
	if err != nil || !sameLocation(got, l) || !got.UpdatedAt.Equal(l.UpdatedAt) {
		t.Fatalf("a failed fn changed the row: %+v, %v", got, err)
	}
	if loc := blobLocation(t, db, logo); loc != "" {
		t.Fatalf("a failed fn tied the logo to %q", loc)
	}
}

func TestIntegrationLocationRepo_UpdateMissingOrBadLogo(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Locations()
	_, err := repo.Update(ctx, 777, func(*business.Location) error {
		t.Error("fn called for a missing location")
		return nil
	})
	if !errors.Is(err, business.ErrLocationNotFound) {
		t.Fatalf("missing location: %v", err)
	}

	l := seedLocation(t, db, seedBusiness(t, db, "owner-1"), "Main")
	_, err = repo.Update(ctx, l.ID, func(x *business.Location) error { x.Name, x.LogoBlobID = "Changed", 999; return nil })
	if !errors.Is(err, storage.ErrBlobNotFound) {
		t.Fatalf("missing logo: %v", err)
	}
	if got, err := repo.Get(ctx, l.ID); err != nil || got.Name != "Main" {
		t.Fatalf("a failed update changed the row: %+v, %v", got, err)
	}
}

// A replaced logo's row is dropped in the transaction of the replacement:
// it goes when the change commits, with what the core needs to remove its
// object and name its business, and stays when the change rolls back.
func TestIntegrationLogoRepo_DropsTheReplacedLogoWithTheChange(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	oldLogo, newLogo := seedLogo(t, db, "old-logo"), seedLogo(t, db, "new-logo")
	l := fullLocation(b.ID, oldLogo)
	if err := db.Locations().Create(ctx, &l); err != nil {
		t.Fatal(err)
	}
	replace := func(fail error) (business.DroppedLogo, bool, error) {
		var d business.DroppedLogo
		var found bool
		err := db.BusinessTx().WithinTx(ctx, func(ctx context.Context, r business.Repos) error {
			if _, err := r.Locations.Update(ctx, l.ID, func(l *business.Location) error { l.LogoBlobID = newLogo; return nil }); err != nil {
				return err
			}
			var err error
			if d, found, err = r.Logos.Drop(ctx, oldLogo); err != nil {
				return err
			}
			return fail
		})
		return d, found, err
	}

	if _, _, err := replace(errors.New("boom")); err == nil {
		t.Fatal("the failing change committed")
	}
	if _, err := db.Blobs().Get(ctx, oldLogo); err != nil {
		t.Fatalf("the old logo went with a change that rolled back: %v", err)
	}

	d, found, err := replace(nil)
	want := business.DroppedLogo{BlobID: oldLogo, Container: "images", Object: "old-logo", LocationID: fmt.Sprint(l.ID), BusinessID: b.ID}
	if err != nil || !found || d != want {
		t.Fatalf("drop: %+v, %v, %v; want %+v", d, found, err, want)
	}
	if _, err := db.Blobs().Get(ctx, oldLogo); !errors.Is(err, storage.ErrBlobNotFound) {
		t.Fatalf("the old logo's row after the change: %v", err)
	}
	if got, err := db.Locations().Get(ctx, l.ID); err != nil || got.LogoBlobID != newLogo {
		t.Fatalf("location after the change: %+v, %v", got, err)
	}
	err = db.BusinessTx().WithinTx(ctx, func(ctx context.Context, r business.Repos) error {
		_, found, err := r.Logos.Drop(ctx, oldLogo)
		if found {
			t.Error("a dropped logo was found again")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
