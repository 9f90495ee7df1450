package business

import (
	"context"
	"testing"

	"github.com/carebridge/carebridge/core"
)

// useCase calls one use case of the service on a resource of the owner's
// business; touches counts the repository calls past the membership check
// (nil: the membership lookup is the whole use case); reads says whether
// it only reads (any member) or changes something (owner and admin).
type useCase struct {
	name     string
	call     func(ctx context.Context, s *Service) error
	notFound error
	touches  func(f *fixture) int
	reads    bool
}

func useCases() []useCase {
	return []useCase{
		{
			name:     "Business",
			reads:    true,
			call:     func(ctx context.Context, s *Service) error { _, err := s.Business(ctx, ownBizID); return err },
			notFound: ErrBusinessNotFound,
		},
		{
			name: "EditBusiness",
			call: func(ctx context.Context, s *Service) error {
				_, err := s.EditBusiness(ctx, ownBizID, BusinessEdit{Name: ptr("Renamed")})
				return err
			},
			notFound: ErrBusinessNotFound,
			touches:  func(f *fixture) int { return len(f.businesses.UpdateCalls()) },
		},
		{
			name:     "Locations",
			reads:    true,
			call:     func(ctx context.Context, s *Service) error { _, err := s.Locations(ctx, ownBizID); return err },
			notFound: ErrBusinessNotFound,
			touches:  func(f *fixture) int { return len(f.locations.ListByBusinessCalls()) },
		},
		{
			name:     "AuthorizeLocationCreate",
			call:     func(ctx context.Context, s *Service) error { return s.AuthorizeLocationCreate(ctx, ownBizID) },
			notFound: ErrBusinessNotFound,
		},
		{
			name:     "AuthorizeLocationUpdate",
			call:     func(ctx context.Context, s *Service) error { return s.AuthorizeLocationUpdate(ctx, ownLocID) },
			notFound: ErrLocationNotFound,
		},
		{
			name: "CreateLocation",
			call: func(ctx context.Context, s *Service) error {
				_, err := s.CreateLocation(ctx, ownBizID, LocationInput{Name: ptr("Uptown")}, pngLogo())
				return err
			},
			notFound: ErrBusinessNotFound,
			touches:  func(f *fixture) int { return len(f.locations.CreateCalls()) + len(f.logos.StoreCalls()) },
		},
		{
			name: "UpdateLocation",
			call: func(ctx context.Context, s *Service) error {
				_, err := s.UpdateLocation(ctx, ownLocID, LocationInput{Name: ptr("Renamed")}, pngLogo())
				return err
			},
			notFound: ErrLocationNotFound,
			touches:  func(f *fixture) int { return len(f.locations.UpdateCalls()) + len(f.logos.StoreCalls()) },
		},
		{
			name:     "Providers",
			reads:    true,
			call:     func(ctx context.Context, s *Service) error { _, err := s.Providers(ctx, ownLocID); return err },
			notFound: ErrLocationNotFound,
			touches:  func(f *fixture) int { return len(f.providers.ListByLocationCalls()) },
		},
		{
			name:     "Hours",
			reads:    true,
			call:     func(ctx context.Context, s *Service) error { _, err := s.Hours(ctx, ownLocID); return err },
			notFound: ErrLocationNotFound,
			touches:  func(f *fixture) int { return len(f.hours.ListCalls()) },
		},
		{
			name: "AddHours",
			call: func(ctx context.Context, s *Service) error {
				_, err := s.AddHours(ctx, ownLocID, []HoursInput{{Day: "Tuesday", Start: "08:00", End: "17:00"}})
				return err
			},
			notFound: ErrLocationNotFound,
			touches:  func(f *fixture) int { return len(f.hours.AddCalls()) },
		},
		{
			name: "UpdateHours",
			call: func(ctx context.Context, s *Service) error {
				_, err := s.UpdateHours(ctx, ownHoursID, HoursInput{Day: "Monday", Start: "07:00", End: "15:00"})
				return err
			},
			notFound: ErrHoursNotFound,
			touches:  func(f *fixture) int { return len(f.hours.UpdateCalls()) },
		},
		{
			name:     "DeleteHours",
			call:     func(ctx context.Context, s *Service) error { return s.DeleteHours(ctx, ownHoursID) },
			notFound: ErrHoursNotFound,
			touches:  func(f *fixture) int { return len(f.hours.DeleteCalls()) },
		},
	}
}

func TestUseCases_OwnerAndAdminSucceed(t *testing.T) {
	for _, sub := range []string{ownerSub, adminSub} {
		for _, uc := range useCases() {
			t.Run(sub+"/"+uc.name, func(t *testing.T) {
				f := newFixture(t)
				noErr(t, uc.call(as(sub), f.svc))
				if uc.touches != nil && uc.touches(f) == 0 {
					t.Errorf("%s did not reach the repository", uc.name)
				}
			})
		}
	}
}

func TestUseCases_StaffReadsButChangesNothing(t *testing.T) {
	for _, uc := range useCases() {
		t.Run(uc.name, func(t *testing.T) {
			f := newFixture(t)
			err := uc.call(as(staffSub), f.svc)
			if uc.reads {
				noErr(t, err)
				return
			}
			wantErr(t, err, core.ErrInsufficientRole)
			if core.KindOf(err) != core.KindForbidden {
				t.Errorf("kind = %v, want KindForbidden", core.KindOf(err))
			}
			if uc.touches != nil && uc.touches(f) != 0 {
				t.Errorf("%d repository calls past the role check for staff, want 0", uc.touches(f))
			}
		})
	}
}

func TestUseCases_HideAnotherOwnersResourceAsNotFound(t *testing.T) {
	for _, uc := range useCases() {
		t.Run(uc.name, func(t *testing.T) {
			f := newFixture(t)
			err := uc.call(as(strangerSub), f.svc)
			wantErr(t, err, uc.notFound)
			if core.KindOf(err) != core.KindNotFound {
				t.Errorf("kind = %v, want KindNotFound", core.KindOf(err))
			}
			if uc.touches != nil && uc.touches(f) != 0 {
				t.Errorf("%d repository calls past the membership check for a stranger, want 0", uc.touches(f))
			}
		})
	}
}

func TestUseCases_RequireAnActor(t *testing.T) {
	for _, ctx := range []struct {
		name string
		ctx  context.Context
	}{
		{"no actor", context.Background()},
		{"empty subject", core.WithActor(context.Background(), core.Actor{})},
	} {
		for _, uc := range useCases() {
			t.Run(ctx.name+"/"+uc.name, func(t *testing.T) {
				f := newFixture(t)
				wantErr(t, uc.call(ctx.ctx, f.svc), core.ErrUnauthenticated)
				if uc.touches != nil && uc.touches(f) != 0 {
					t.Errorf("%d repository calls without an actor, want 0", uc.touches(f))
				}
				if n := len(f.businesses.GetCalls()) + len(f.locations.GetCalls()) + len(f.hours.GetCalls()); n != 0 {
					t.Errorf("%d lookups without an actor, want 0", n)
				}
			})
		}
	}
}

func TestBusinessUseCases_RejectNonUUIDBusinessID(t *testing.T) {
	calls := map[string]func(s *Service, id string) error{
		"Business": func(s *Service, id string) error { _, err := s.Business(as(ownerSub), id); return err },
		"EditBusiness": func(s *Service, id string) error {
			_, err := s.EditBusiness(as(ownerSub), id, BusinessEdit{Name: ptr("X")})
			return err
		},
		"Locations": func(s *Service, id string) error { _, err := s.Locations(as(ownerSub), id); return err },
		"CreateLocation": func(s *Service, id string) error {
			_, err := s.CreateLocation(as(ownerSub), id, LocationInput{Name: ptr("X")}, nil)
			return err
		},
	}
	for name, call := range calls {
		for _, id := range []string{"", "42", "not-a-uuid", ownBizID + "0", "0b7e4d2a6f1c4c1e9a553f2d1c0e9b01", "0b7e4d2a-6f1c-4c1e-9a55-3f2d1c0e9b0g", "../" + ownBizID} {
			t.Run(name+"/"+id, func(t *testing.T) {
				f := newFixture(t)
				err := call(f.svc, id)
				wantErr(t, err, ErrInvalidBusinessID)
				if core.KindOf(err) != core.KindInvalid {
					t.Errorf("kind = %v, want KindInvalid", core.KindOf(err))
				}
				if n := len(f.businesses.GetCalls()); n != 0 {
					t.Errorf("BusinessRepo.Get called %d times for an invalid id", n)
				}
			})
		}
	}
}

func TestBusiness_ReturnsOwnedBusinessAndAcceptsUpperCaseUUID(t *testing.T) {
	f := newFixture(t)
	b, err := f.svc.Business(as(ownerSub), "0B7E4D2A-6F1C-4C1E-9A55-3F2D1C0E9B01")
	noErr(t, err)
	if b.ID != ownBizID || b.Name != "Lakeside Clinic" {
		t.Errorf("business = %+v, want the owner's business", b)
	}
	if got := f.businesses.GetCalls()[0].ID; got != ownBizID {
		t.Errorf("BusinessRepo.Get id = %q, want the lower-case %q", got, ownBizID)
	}
}

func TestBusiness_MissingBusinessIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.Business(as(ownerSub), "11111111-2222-4333-8444-555555555555")
	wantErr(t, err, ErrBusinessNotFound)
}

func TestLocations_ListsOnlyThatBusinessesLocations(t *testing.T) {
	f := newFixture(t)
	ls, err := f.svc.Locations(as(ownerSub), ownBizID)
	noErr(t, err)
	if len(ls) != 1 || ls[0].ID != ownLocID {
		t.Errorf("locations = %+v, want only location %d", ls, ownLocID)
	}
	if got := f.locations.ListByBusinessCalls()[0].BusinessID; got != ownBizID {
		t.Errorf("ListByBusiness(%q), want %q", got, ownBizID)
	}
}

func TestLocationUseCases_MissingOrNonPositiveLocationIsNotFound(t *testing.T) {
	for _, id := range []int64{999, 0, -1} {
		f := newFixture(t)
		ctx := as(ownerSub)
		_, err := f.svc.Providers(ctx, id)
		wantErr(t, err, ErrLocationNotFound)
		_, err = f.svc.Hours(ctx, id)
		wantErr(t, err, ErrLocationNotFound)
		_, err = f.svc.UpdateLocation(ctx, id, LocationInput{Name: ptr("X")}, nil)
		wantErr(t, err, ErrLocationNotFound)
		_, err = f.svc.AddHours(ctx, id, []HoursInput{{Day: "Friday", Start: "08:00", End: "09:00"}})
		wantErr(t, err, ErrLocationNotFound)
		if len(f.providers.ListByLocationCalls())+len(f.hours.ListCalls())+len(f.locations.UpdateCalls())+len(f.hours.AddCalls()) != 0 {
			t.Errorf("location %d: a repository was used for a missing location", id)
		}
	}
}
