package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/test/pgtest"
)

func TestIntegrationProviderRepo_CreateAndListByLocation(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Providers()
	b := seedBusiness(t, db, "owner-1")
	here, there := seedLocation(t, db, b, "Here"), seedLocation(t, db, b, "There")

	add := func(first, last, telehealth string, loc int64) business.Provider {
		t.Helper()
		p := business.Provider{FirstName: first, LastName: last, Email: first + "@example.com", TelehealthLink: telehealth}
		if err := repo.Create(ctx, &p, loc); err != nil {
			t.Fatal(err)
		}
		if p.ID <= 0 {
			t.Fatalf("create did not set the id: %+v", p)
		}
		return p
	}
	zed := add("Zed", "Adams", "https://meet.example/zed", here.ID)
	amy := add("Amy", "Baker", "", here.ID)
	anna1 := add("Anna", "Adams", "", here.ID)
	anna2 := add("Anna", "Adams", "https://meet.example/anna", here.ID)
	add("Other", "Aaron", "", there.ID)

	got, err := repo.ListByLocation(ctx, here.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := []business.Provider{anna1, anna2, zed, amy}
	if len(got) != len(want) {
		t.Fatalf("got %d providers, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("provider %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	var nullLink bool
	if err := db.Pool().QueryRow(ctx, `SELECT telehealth_link IS NULL FROM providers WHERE id = $1`, amy.ID).Scan(&nullLink); err != nil || !nullLink {
		t.Fatalf("empty telehealth link is not NULL: %v, %v", nullLink, err)
	}

	if none, err := repo.ListByLocation(ctx, 9999); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("unknown location: %v, %v", none, err)
	}
}

func TestIntegrationProviderRepo_CreateForMissingLocationLeavesNothing(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	p := business.Provider{FirstName: "A", LastName: "B", Email: "a@example.com"}
	if err := db.Providers().Create(ctx, &p, 4242); !errors.Is(err, business.ErrLocationNotFound) {
		t.Fatalf("got %v, want ErrLocationNotFound", err)
	}
	if p.ID != 0 {
		t.Errorf("a failed create set the id %d", p.ID)
	}
	var n int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM providers`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d provider rows left (%v)", n, err)
	}
}
