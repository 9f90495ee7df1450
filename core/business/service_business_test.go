package business

import (
	"context"
	"strings"
	"testing"
)

func TestEditBusiness_LeavesNilFieldsUntouched(t *testing.T) {
	f := newFixture(t)
	before := f.bizs[ownBizID]

	got, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{
		Name:  ptr("  Lakeside Family Clinic "),
		City:  ptr("Evanston"),
		State: ptr(" il "),
	})
	noErr(t, err)

	stored := f.bizs[ownBizID]
	if stored.Name != "Lakeside Family Clinic" || stored.City != "Evanston" || stored.State != "IL" {
		t.Errorf("stored = %+v, want trimmed name, new city, upper-cased state", stored)
	}
	if stored.Email != before.Email || stored.Website != before.Website || stored.OwnerSubject != ownerSub {
		t.Errorf("stored = %+v, untouched fields changed (before %+v)", stored, before)
	}
	if got != stored {
		t.Errorf("returned %+v, want the stored %+v", got, stored)
	}
}

func TestEditBusiness_EmptyStringClearsOptionalField(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{Website: ptr(""), City: ptr("  ")})
	noErr(t, err)
	if b := f.bizs[ownBizID]; b.Website != "" || b.City != "" || b.Name != "Lakeside Clinic" {
		t.Errorf("stored = %+v, want website and city cleared, name kept", b)
	}
}

func TestEditBusiness_AcceptsValidFormats(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{
		Email: ptr("new@lakeside.example.com"), NPILicense: ptr("1234567893"), TaxID: ptr("12-3456789"),
		Website: ptr("https://lakeside.example.org"), ZipCode: ptr("60601-1234"), State: ptr("tx"),
		TwitterLink: ptr("https://twitter.com/lakeside"), InstagramLink: ptr("https://instagram.com/lakeside"),
		YoutubeLink: ptr("https://youtube.com/@lakeside"), Description: ptr("Family medicine\nsince 1990"),
	})
	noErr(t, err)
	if b := f.bizs[ownBizID]; b.NPILicense != "1234567893" || b.TaxID != "12-3456789" || b.State != "TX" || b.YoutubeLink != "https://youtube.com/@lakeside" {
		t.Errorf("stored = %+v", b)
	}
}

func TestEditBusiness_ReportsEveryInvalidFieldAndStoresNothing(t *testing.T) {
	f := newFixture(t)
	before := f.bizs[ownBizID]

	_, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{
		Name:          ptr("   "),
		Email:         ptr("not-an-email"),
		NPILicense:    ptr("1234567890"),
		TaxID:         ptr("123456789"),
		Website:       ptr("javascript:alert(1)"),
		State:         ptr("Illinois"),
		ZipCode:       ptr("6060"),
		TwitterLink:   ptr("ftp://twitter.com/x"),
		InstagramLink: ptr("instagram.com/x"),
		YoutubeLink:   ptr("https://user:pw@youtube.com"),
		Description:   ptr("bad\x00byte"),
		City:          ptr(strings.Repeat("x", 101)),
	})
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "name is required", "email must be", "npiLicense", "taxId", "website", "state", "zipCode",
		"twitterLink", "instagramLink", "youtubeLink", "description must be plain text", "city must be at most 100")
	if n := len(f.businesses.UpdateCalls()); n != 0 {
		t.Errorf("BusinessRepo.Update called %d times on invalid input", n)
	}
	if f.bizs[ownBizID] != before {
		t.Errorf("stored business changed on invalid input")
	}
}

func TestEditBusiness_RequiresEmailWhenGiven(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{Email: ptr(" ")})
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "email is required")
	if n := len(f.businesses.UpdateCalls()); n != 0 {
		t.Errorf("BusinessRepo.Update called %d times", n)
	}
}

func TestEditBusiness_StrangerWithInvalidInputStillGetsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.EditBusiness(as(strangerSub), ownBizID, BusinessEdit{Email: ptr("bad")})
	wantErr(t, err, ErrBusinessNotFound)
}

func TestEditBusiness_PassesThroughRepositoryFailure(t *testing.T) {
	f := newFixture(t)
	f.businesses.UpdateFunc = func(_ context.Context, _ string, _ func(*Business) error) (Business, error) {
		return Business{}, errBoom
	}
	_, err := f.svc.EditBusiness(as(ownerSub), ownBizID, BusinessEdit{Name: ptr("X")})
	wantErr(t, err, errBoom)
}
