package business

import (
	"context"
	"fmt"
	"testing"

	"github.com/carebridge/carebridge/core"
)

// completeInput sets every field isComplete needs, and a few optional ones.
func completeInput() LocationInput {
	return LocationInput{
		Name: ptr("Uptown"), Timezone: ptr("America/Chicago"), Phone: ptr("(312) 555-0199"),
		Email: ptr("uptown@lakeside.example.com"), Address: ptr("1 N State St"), City: ptr("Chicago"),
		State: ptr("IL"), ZipCode: ptr("60602"), Country: ptr("US"),
	}
}

func TestCreateLocation_RequiresName(t *testing.T) {
	for name, in := range map[string]LocationInput{
		"missing": {City: ptr("Chicago")},
		"empty":   {Name: ptr("")},
		"blank":   {Name: ptr(" \t ")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, in, pngLogo())
			wantErr(t, err, ErrInvalid)
			wantMessage(t, err, "generalInfo.name is required")
			if n := len(f.locations.CreateCalls()) + len(f.logos.StoreCalls()); n != 0 {
				t.Errorf("%d store calls on invalid input, want 0", n)
			}
		})
	}
}

func TestCreateLocation_ReportsEveryInvalidFieldAndStoresNothing(t *testing.T) {
	f := newFixture(t)
	in := LocationInput{
		Name: ptr("Uptown"), Timezone: ptr("Mars/Base"), NPI: ptr("123456789"), TaxID: ptr("12345"),
		Phone: ptr("call me"), Fax: ptr("12"), Email: ptr("nope"), Website: ptr("javascript:alert(1)"),
		AdminPhone: ptr("x"), AdminEmail: ptr("admin@"), State: ptr("zz"), ZipCode: ptr("ABCDE"),
	}
	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, in, pngLogo())
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "generalInfo.timezone", "generalInfo.npi", "generalInfo.taxId", "generalInfo.phone",
		"generalInfo.fax", "generalInfo.email", "generalInfo.website", "generalInfo.adminPhone",
		"generalInfo.adminEmail", "address.state", "address.zipCode")
	if n := len(f.locations.CreateCalls()) + len(f.logos.StoreCalls()); n != 0 {
		t.Errorf("%d store calls on invalid input, want 0", n)
	}
}

func TestCreateLocation_IsCompleteOnlyWithEveryRequiredField(t *testing.T) {
	f := newFixture(t)
	l, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), nil)
	noErr(t, err)
	if !l.IsComplete() {
		t.Errorf("location with every required field is not complete: %+v", l)
	}

	drop := map[string]func(*LocationInput){
		"timezone": func(in *LocationInput) { in.Timezone = nil },
		"phone":    func(in *LocationInput) { in.Phone = nil },
		"email":    func(in *LocationInput) { in.Email = ptr("") },
		"address":  func(in *LocationInput) { in.Address = ptr("  ") },
		"city":     func(in *LocationInput) { in.City = nil },
		"state":    func(in *LocationInput) { in.State = nil },
		"zipCode":  func(in *LocationInput) { in.ZipCode = nil },
		"country":  func(in *LocationInput) { in.Country = nil },
	}
	for field, fn := range drop {
		t.Run("without "+field, func(t *testing.T) {
			f := newFixture(t)
			in := completeInput()
			fn(&in)
			l, err := f.svc.CreateLocation(as(ownerSub), ownBizID, in, nil)
			noErr(t, err)
			if l.IsComplete() {
				t.Errorf("location without %s is complete", field)
			}
		})
	}
	// Name is the ninth field; create refuses a location without one, so
	// check the rule on the type itself.
	l.Name = ""
	if l.IsComplete() {
		t.Error("location without name is complete")
	}
}

func TestCreateLocation_StoresFieldsWithParsedAdminNameAndUpperCaseState(t *testing.T) {
	f := newFixture(t)
	in := completeInput()
	in.State = ptr(" il ")
	in.AdminName = ptr("  Dr. Anna van der Berg, PhD ")
	in.Suite = ptr("Suite 200")

	l, err := f.svc.CreateLocation(as(ownerSub), ownBizID, in, nil)
	noErr(t, err)

	if l.ID == 0 || l.BusinessID != ownBizID {
		t.Errorf("location = %+v, want an id and the business", l)
	}
	if l.State != "IL" {
		t.Errorf("State = %q, want IL", l.State)
	}
	if l.AdminName != "Dr. Anna van der Berg, PhD" || l.AdminFirstName != "Anna" || l.AdminLastName != "van der Berg" {
		t.Errorf("admin = %q / %q / %q, want the trimmed name split into Anna / van der Berg", l.AdminName, l.AdminFirstName, l.AdminLastName)
	}
	if l.LogoBlobID != 0 {
		t.Errorf("LogoBlobID = %d without a logo", l.LogoBlobID)
	}
	if n := len(f.logos.StoreCalls()); n != 0 {
		t.Errorf("Logos.Store called %d times without a logo", n)
	}
	created := f.locations.CreateCalls()
	if len(created) != 1 {
		t.Fatalf("LocationRepo.Create called %d times, want 1", len(created))
	}
	if stored := f.locs[l.ID]; stored != l {
		t.Errorf("stored %+v, returned %+v", stored, l)
	}
}

func TestCreateLocation_StoresLogoAndRecordsItsBlobID(t *testing.T) {
	f := newFixture(t)
	logo := pngLogo()
	l, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), logo)
	noErr(t, err)

	stores := f.logos.StoreCalls()
	if len(stores) != 1 || stores[0].Logo.Filename != logo.Filename || string(stores[0].Logo.Body) != string(logo.Body) {
		t.Fatalf("Logos.Store calls = %+v, want one with the logo", stores)
	}
	if l.LogoBlobID != f.nextBlob || l.LogoBlobID == 0 {
		t.Errorf("LogoBlobID = %d, want the stored blob %d", l.LogoBlobID, f.nextBlob)
	}
	if got := f.locations.CreateCalls()[0].L.LogoBlobID; got != f.nextBlob {
		t.Errorf("LocationRepo.Create got LogoBlobID %d, want %d (tied in the same transaction)", got, f.nextBlob)
	}
	if n := len(f.logos.RemoveCalls()); n != 0 {
		t.Errorf("Logos.Remove called %d times on success", n)
	}
}

func TestCreateLocation_AcceptsLogoContentTypeWithParameters(t *testing.T) {
	f := newFixture(t)
	logo := pngLogo()
	logo.ContentType = "Image/PNG; charset=binary"
	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), logo)
	noErr(t, err)
}

func TestCreateLocation_RemovesStoredLogoWhenCreateFails(t *testing.T) {
	f := newFixture(t)
	f.locations.CreateFunc = func(context.Context, *Location) error { return errBoom }

	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), pngLogo())
	wantErr(t, err, errBoom)

	stored := f.nextBlob
	removes := f.logos.RemoveCalls()
	if len(removes) != 1 || removes[0].BlobID != stored {
		t.Fatalf("Logos.Remove calls = %+v, want one for blob %d", removes, stored)
	}
	if _, ok := f.blobs[stored]; ok {
		t.Error("the logo blob is still stored")
	}
}

func TestCreateLocation_RemovesLogoEvenWhenRequestIsCancelled(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(as(ownerSub))
	f.locations.CreateFunc = func(context.Context, *Location) error {
		cancel() // the client went away during the insert
		return context.Canceled
	}
	var removeCtxErr error = errBoom
	f.logos.RemoveFunc = func(ctx context.Context, _ int64) error {
		removeCtxErr = ctx.Err()
		return nil
	}

	_, err := f.svc.CreateLocation(ctx, ownBizID, completeInput(), pngLogo())
	wantErr(t, err, context.Canceled)
	if n := len(f.logos.RemoveCalls()); n != 1 {
		t.Fatalf("Logos.Remove called %d times, want 1", n)
	}
	if removeCtxErr != nil {
		t.Errorf("Logos.Remove ran with a done context: %v", removeCtxErr)
	}
}

func TestCreateLocation_RejectsNonImageLogo(t *testing.T) {
	for _, ct := range []string{"application/pdf", "text/html", "", "imagex/png", "application/octet-stream"} {
		t.Run(ct, func(t *testing.T) {
			f := newFixture(t)
			logo := pngLogo()
			logo.ContentType = ct
			_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), logo)
			wantErr(t, err, ErrInvalidLogo)
			if n := len(f.logos.StoreCalls()) + len(f.locations.CreateCalls()); n != 0 {
				t.Errorf("%d store calls for a non-image logo, want 0", n)
			}
		})
	}
}

func TestCreateLocation_RejectsOversizedLogo(t *testing.T) {
	f := newFixture(t)
	logo := pngLogo()
	logo.Size = MaxLogoBytes + 1
	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), logo)
	if core.KindOf(err) != core.KindTooLarge {
		t.Fatalf("err = %v (kind %v), want KindTooLarge", err, core.KindOf(err))
	}
	if n := len(f.logos.StoreCalls()) + len(f.locations.CreateCalls()); n != 0 {
		t.Errorf("%d store calls for an oversized logo, want 0", n)
	}
}

func TestCreateLocation_AcceptsLogoOfExactlyMaxSize(t *testing.T) {
	f := newFixture(t)
	logo := pngLogo()
	logo.Size = MaxLogoBytes
	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), logo)
	noErr(t, err)
}

func TestCreateLocation_LogoStoreFailureCreatesNothing(t *testing.T) {
	f := newFixture(t)
	f.logos.StoreFunc = func(context.Context, Logo) (int64, error) { return 0, errBoom }
	_, err := f.svc.CreateLocation(as(ownerSub), ownBizID, completeInput(), pngLogo())
	wantErr(t, err, errBoom)
	if n := len(f.locations.CreateCalls()) + len(f.logos.RemoveCalls()); n != 0 {
		t.Errorf("%d create/remove calls after a failed logo store, want 0", n)
	}
}

func TestCreateLocation_MissingBusinessIsNotFound(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.CreateLocation(as(ownerSub), "11111111-2222-4333-8444-555555555555", completeInput(), pngLogo())
	wantErr(t, err, ErrBusinessNotFound)
	if n := len(f.logos.StoreCalls()) + len(f.locations.CreateCalls()); n != 0 {
		t.Errorf("%d store calls for a missing business, want 0", n)
	}
}

func TestUpdateLocation_LeavesNilFieldsUntouched(t *testing.T) {
	f := newFixture(t)
	before := f.locs[ownLocID]

	l, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{City: ptr(" Evanston "), State: ptr("il"), Fax: ptr("")}, nil)
	noErr(t, err)

	stored := f.locs[ownLocID]
	if stored.City != "Evanston" || stored.State != "IL" {
		t.Errorf("stored = %+v, want the new city and state", stored)
	}
	if stored.Name != before.Name || stored.Phone != before.Phone || stored.LogoBlobID != oldLogoID ||
		stored.AdminName != before.AdminName || stored.AdminFirstName != "Jane" || stored.AdminLastName != "Smith" {
		t.Errorf("stored = %+v, untouched fields changed (before %+v)", stored, before)
	}
	if l.City != "Evanston" {
		t.Errorf("returned %+v, want the updated location", l)
	}
	if n := len(f.logos.StoreCalls()) + len(f.logos.RemoveCalls()); n != 0 {
		t.Errorf("%d logo calls without a logo, want 0", n)
	}
}

func TestUpdateLocation_ReparsesAdminName(t *testing.T) {
	f := newFixture(t)
	_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{AdminName: ptr("Public, John Q.")}, nil)
	noErr(t, err)
	if l := f.locs[ownLocID]; l.AdminFirstName != "John" || l.AdminLastName != "Public" {
		t.Errorf("admin = %q %q, want John Public", l.AdminFirstName, l.AdminLastName)
	}

	_, err = f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{AdminName: ptr("")}, nil)
	noErr(t, err)
	if l := f.locs[ownLocID]; l.AdminName != "" || l.AdminFirstName != "" || l.AdminLastName != "" {
		t.Errorf("admin = %q %q %q, want all cleared", l.AdminName, l.AdminFirstName, l.AdminLastName)
	}
}

func TestUpdateLocation_RejectsInvalidFieldsAndChangesNothing(t *testing.T) {
	f := newFixture(t)
	before := f.locs[ownLocID]
	_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{Name: ptr(""), Timezone: ptr("Local"), ZipCode: ptr("1")}, pngLogo())
	wantErr(t, err, ErrInvalid)
	wantMessage(t, err, "generalInfo.name is required", "generalInfo.timezone", "address.zipCode")
	if n := len(f.locations.UpdateCalls()) + len(f.logos.StoreCalls()); n != 0 {
		t.Errorf("%d store calls on invalid input, want 0", n)
	}
	if f.locs[ownLocID] != before {
		t.Error("stored location changed on invalid input")
	}
}

// A new logo replaces the old one, whose row goes in the update's own
// transaction with its blob.deleted event, whoever uploaded it: removing it
// as the caller (Logos.Remove) failed when the caller might not delete it,
// and left it orphaned when the removal failed after the commit. Its
// object goes after the commit.
func TestUpdateLocation_NewLogoReplacesOldWhoseRowGoesInTheSameTransaction(t *testing.T) {
	f := newFixture(t)
	// As the storage core answers a caller who may not delete the blob.
	f.logos.RemoveFunc = func(context.Context, int64) error { return errBoom }
	var committedAtRemove int
	f.logos.RemoveObjectFunc = func(context.Context, string, string) error {
		committedAtRemove = len(f.events)
		return errBoom // left to the sweeper: the update stands
	}

	l, err := f.svc.UpdateLocation(as(adminSub), ownLocID, LocationInput{}, pngLogo())
	noErr(t, err)

	newID := f.nextBlob
	if l.LogoBlobID != newID || f.locs[ownLocID].LogoBlobID != newID {
		t.Errorf("LogoBlobID returned %d, stored %d; want the new blob %d", l.LogoBlobID, f.locs[ownLocID].LogoBlobID, newID)
	}
	if _, ok := f.blobs[oldLogoID]; ok {
		t.Fatal("the old logo's row is still there")
	}
	if _, ok := f.blobs[newID]; !ok {
		t.Error("the new logo is not stored")
	}
	if n := len(f.logos.RemoveCalls()); n != 0 {
		t.Errorf("Logos.Remove called %d times: the old logo is not removed as the caller", n)
	}
	drops := f.logoRows.DropCalls()
	if len(drops) != 1 || drops[0].BlobID != oldLogoID {
		t.Fatalf("drops %+v, want the old logo %d", drops, oldLogoID)
	}
	objs := f.logos.RemoveObjectCalls()
	if len(objs) != 1 || objs[0].Container != "images" || objs[0].Object != fmt.Sprintf("logo-object-%d", oldLogoID) || committedAtRemove != 2 {
		t.Fatalf("object removals %+v after %d committed events; want the old logo's, after the update's two", objs, committedAtRemove)
	}
	if len(f.events) != 2 || f.events[0].Type != core.LocationUpdated || f.events[1].Type != core.BlobDeleted || f.events[1].BusinessID != ownBizID {
		t.Fatalf("events %+v, want location.updated and the old logo's blob.deleted of the business", f.events)
	}
}

func TestUpdateLocation_FirstLogoRemovesNothing(t *testing.T) {
	f := newFixture(t)
	l := f.locs[ownLocID]
	l.LogoBlobID = 0
	f.locs[ownLocID] = l

	_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{}, pngLogo())
	noErr(t, err)
	if n := len(f.logos.RemoveCalls()) + len(f.logoRows.DropCalls()) + len(f.logos.RemoveObjectCalls()); n != 0 {
		t.Errorf("%d removals, want 0", n)
	}
	if f.locs[ownLocID].LogoBlobID != f.nextBlob {
		t.Errorf("LogoBlobID = %d, want %d", f.locs[ownLocID].LogoBlobID, f.nextBlob)
	}
}

func TestUpdateLocation_UpdateFailureRemovesNewLogoAndKeepsOld(t *testing.T) {
	f := newFixture(t)
	f.locations.UpdateFunc = func(context.Context, int64, func(*Location) error) (Location, error) {
		return Location{}, errBoom
	}

	_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{Name: ptr("Renamed")}, pngLogo())
	wantErr(t, err, errBoom)

	newID := f.nextBlob
	removes := f.logos.RemoveCalls()
	if len(removes) != 1 || removes[0].BlobID != newID {
		t.Fatalf("Logos.Remove calls = %+v, want one for the new blob %d", removes, newID)
	}
	if _, ok := f.blobs[oldLogoID]; !ok {
		t.Error("the old logo was removed")
	}
	if l := f.locs[ownLocID]; l.LogoBlobID != oldLogoID || l.Name != "Downtown" {
		t.Errorf("stored = %+v, want it unchanged", l)
	}
}

func TestUpdateLocation_FailureInsideUpdateKeepsOldLogo(t *testing.T) {
	// The repository ran fn but then failed to store (a lost row lock, a
	// constraint): the old logo is still the location's and must stay.
	f := newFixture(t)
	f.locations.UpdateFunc = func(_ context.Context, id int64, fn func(*Location) error) (Location, error) {
		l := f.locs[id]
		if err := fn(&l); err != nil {
			return Location{}, err
		}
		return Location{}, errBoom
	}

	_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{}, pngLogo())
	wantErr(t, err, errBoom)
	for _, c := range f.logos.RemoveCalls() {
		if c.BlobID == oldLogoID {
			t.Error("the old logo was removed although the update failed")
		}
	}
	if n := len(f.logos.RemoveCalls()); n != 1 {
		t.Errorf("Logos.Remove called %d times, want 1 (the new logo)", n)
	}
	if n := len(f.logoRows.DropCalls()) + len(f.logos.RemoveObjectCalls()); n != 0 {
		t.Errorf("the old logo was dropped (%d) although the update failed", n)
	}
}

func TestUpdateLocation_RejectsNonImageOrOversizedLogo(t *testing.T) {
	for name, mod := range map[string]func(*Logo){
		"pdf":       func(l *Logo) { l.ContentType = "application/pdf" },
		"oversized": func(l *Logo) { l.Size = MaxLogoBytes + 1 },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			logo := pngLogo()
			mod(logo)
			_, err := f.svc.UpdateLocation(as(ownerSub), ownLocID, LocationInput{}, logo)
			if k := core.KindOf(err); k != core.KindInvalid && k != core.KindTooLarge {
				t.Fatalf("err = %v, want an invalid or too-large logo", err)
			}
			if n := len(f.logos.StoreCalls()) + len(f.locations.UpdateCalls()) + len(f.logos.RemoveCalls()); n != 0 {
				t.Errorf("%d store calls for a refused logo, want 0", n)
			}
		})
	}
}

func TestProviders_ListsTheLocationsProviders(t *testing.T) {
	f := newFixture(t)
	ps, err := f.svc.Providers(as(ownerSub), ownLocID)
	noErr(t, err)
	if len(ps) != 1 || ps[0].LastName != "House" || ps[0].TelehealthLink != "https://tele.example.com/house" {
		t.Errorf("providers = %+v, want Dr. House with his telehealth link", ps)
	}
	if c := f.providers.ListByLocationCalls(); len(c) != 1 || c[0].LocationID != ownLocID {
		t.Errorf("ListByLocation calls = %+v", c)
	}
}
