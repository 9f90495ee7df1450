package business

import (
	"context"
	"testing"
)

func TestCreateBusiness_StoresTrimmedBusinessWithOwner(t *testing.T) {
	f := newFixture(t)
	b, err := f.svc.CreateBusiness(context.Background(), "  North Shore Clinic ", " admin@northshore.example.com ", " sub-123 ")
	noErr(t, err)

	creates := f.businesses.CreateCalls()
	if len(creates) != 1 {
		t.Fatalf("BusinessRepo.Create called %d times, want 1", len(creates))
	}
	if b.ID == "" || b.Name != "North Shore Clinic" || b.Email != "admin@northshore.example.com" || b.OwnerSubject != "sub-123" {
		t.Errorf("business = %+v, want trimmed fields, the owner and an id", b)
	}
	if f.bizs[b.ID] != b {
		t.Errorf("stored %+v, returned %+v", f.bizs[b.ID], b)
	}
}

func TestCreateBusiness_ReportsEveryMissingField(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.CreateBusiness(context.Background(), " ", "", "\t")
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "name is required", "email is required", "owner is required")
	if n := len(f.businesses.CreateCalls()); n != 0 {
		t.Errorf("BusinessRepo.Create called %d times", n)
	}
}

func TestCreateBusiness_RejectsInvalidEmail(t *testing.T) {
	for _, email := range []string{"not-an-email", "Jane <jane@example.com>", "jane@localhost"} {
		t.Run(email, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.CreateBusiness(context.Background(), "Clinic", email, "sub-123")
			wantErr(t, err, ErrInvalid)
			wantMessage(t, err, "email must be a valid e-mail address")
			if n := len(f.businesses.CreateCalls()); n != 0 {
				t.Errorf("BusinessRepo.Create called %d times", n)
			}
		})
	}
}

func TestCreateBusiness_PassesThroughRepositoryFailure(t *testing.T) {
	f := newFixture(t)
	f.businesses.CreateFunc = func(context.Context, *Business) error { return errBoom }
	_, err := f.svc.CreateBusiness(context.Background(), "Clinic", "a@b.example.com", "sub")
	wantErr(t, err, errBoom)
}

func TestCreateProvider_StoresTrimmedProviderAtLocation(t *testing.T) {
	f := newFixture(t)
	p, err := f.svc.CreateProvider(context.Background(), Provider{
		FirstName: " Lisa ", LastName: " Cuddy ", Email: " cuddy@lakeside.example.com ", TelehealthLink: " https://tele.example.com/cuddy ",
	}, ownLocID)
	noErr(t, err)

	creates := f.providers.CreateCalls()
	if len(creates) != 1 || creates[0].LocationID != ownLocID {
		t.Fatalf("ProviderRepo.Create calls = %+v, want one at location %d", creates, ownLocID)
	}
	want := Provider{ID: p.ID, FirstName: "Lisa", LastName: "Cuddy", Email: "cuddy@lakeside.example.com", TelehealthLink: "https://tele.example.com/cuddy"}
	if p.ID == 0 || p != want {
		t.Errorf("provider = %+v, want %+v with an id", p, want)
	}
}

func TestCreateProvider_TelehealthLinkIsOptional(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.CreateProvider(context.Background(), Provider{FirstName: "Lisa", LastName: "Cuddy", Email: "cuddy@lakeside.example.com"}, ownLocID)
	noErr(t, err)
}

func TestCreateProvider_ReportsEveryInvalidField(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Provider
		want []string
	}{
		{"all missing", Provider{}, []string{"first is required", "last is required", "email is required"}},
		{"blank names", Provider{FirstName: "  ", LastName: "\t", Email: "a@b.example.com"}, []string{"first is required", "last is required"}},
		{"bad email", Provider{FirstName: "A", LastName: "B", Email: "a@b"}, []string{"email must be a valid e-mail address"}},
		{"javascript link", Provider{FirstName: "A", LastName: "B", Email: "a@b.example.com", TelehealthLink: "javascript:alert(1)"}, []string{"telehealth must be an http(s) URL"}},
		{"control characters", Provider{FirstName: "A\x07", LastName: "B", Email: "a@b.example.com"}, []string{"first must be plain text"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.CreateProvider(context.Background(), tc.in, ownLocID)
			wantErr(t, err, ErrInvalid)
			wantMessage(t, err, tc.want...)
			if n := len(f.locations.GetCalls()) + len(f.providers.CreateCalls()); n != 0 {
				t.Errorf("%d repository calls on invalid input, want 0", n)
			}
		})
	}
}

func TestCreateProvider_MissingLocationIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.CreateProvider(context.Background(), Provider{FirstName: "A", LastName: "B", Email: "a@b.example.com"}, 999)
	wantErr(t, err, ErrLocationNotFound)
	if n := len(f.providers.CreateCalls()); n != 0 {
		t.Errorf("ProviderRepo.Create called %d times", n)
	}
}
