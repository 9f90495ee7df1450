package business

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// In-memory fakes built through the moq mocks' Func fields, so a test can
// both rely on plausible repository behaviour and see which calls happened.
// A test replaces a Func field to inject a failure.

const (
	ownerSub    = "owner-subject"
	adminSub    = "admin-subject" // admin of ownBizID
	staffSub    = "staff-subject" // staff of ownBizID
	strangerSub = "stranger-subject"

	ownBizID   = "0b7e4d2a-6f1c-4c1e-9a55-3f2d1c0e9b01"
	otherBizID = "5a9c3e11-2b4d-4f6a-8c7e-9d0f1a2b3c04"

	ownLocID   int64 = 1 // of ownBizID
	otherLocID int64 = 2 // of otherBizID

	ownHoursID   int64 = 10 // Monday at ownLocID
	otherHoursID int64 = 20 // Tuesday at otherLocID

	oldLogoID int64 = 50 // the logo of ownLocID
)

var errBoom = errors.New("boom")

type fixture struct {
	t          *testing.T
	svc        *Service
	businesses *BusinessRepoMock
	members    *MemberRepoMock
	locations  *LocationRepoMock
	providers  *ProviderRepoMock
	hours      *HoursRepoMock
	logos      *LogosMock
	logoRows   *LogoRepoMock
	tx         *TransactorMock
	// events are those of the transactions that committed, in order.
	events []core.Event

	bizs      map[string]Business
	mems      map[string][]Member // by business, oldest first
	locs      map[int64]Location
	provs     map[int64][]Provider
	hrs       map[int64]Hours
	blobs     map[int64]Logo
	nextLoc   int64
	nextHours int64
	nextBlob  int64
	nextProv  int64
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{
		t: t,
		bizs: map[string]Business{
			ownBizID:   {ID: ownBizID, OwnerSubject: ownerSub, Name: "Lakeside Clinic", Email: "front@lakeside.example.com", City: "Chicago", State: "IL", Website: "https://lakeside.example.com"},
			otherBizID: {ID: otherBizID, OwnerSubject: strangerSub, Name: "Other Practice", Email: "info@other.example.com"},
		},
		mems: map[string][]Member{
			ownBizID: {
				{BusinessID: ownBizID, Subject: ownerSub, Role: core.RoleOwner, CreatedAt: time.Unix(1, 0)},
				{BusinessID: ownBizID, Subject: adminSub, Role: core.RoleAdmin, CreatedAt: time.Unix(2, 0)},
				{BusinessID: ownBizID, Subject: staffSub, Role: core.RoleStaff, CreatedAt: time.Unix(3, 0)},
			},
			otherBizID: {{BusinessID: otherBizID, Subject: strangerSub, Role: core.RoleOwner, CreatedAt: time.Unix(1, 0)}},
		},
		locs: map[int64]Location{
			ownLocID: {ID: ownLocID, BusinessID: ownBizID, Name: "Downtown", Phone: "312-555-0100", City: "Chicago", State: "IL",
				AdminName: "Dr. Jane Smith", AdminFirstName: "Jane", AdminLastName: "Smith", LogoBlobID: oldLogoID},
			otherLocID: {ID: otherLocID, BusinessID: otherBizID, Name: "Elsewhere"},
		},
		provs: map[int64][]Provider{
			ownLocID: {{ID: 7, FirstName: "Greg", LastName: "House", Email: "house@lakeside.example.com", TelehealthLink: "https://tele.example.com/house"}},
		},
		hrs: map[int64]Hours{
			ownHoursID:   {ID: ownHoursID, LocationID: ownLocID, Day: time.Monday, Start: "08:00", End: "17:00"},
			otherHoursID: {ID: otherHoursID, LocationID: otherLocID, Day: time.Tuesday, Start: "09:00", End: "12:00"},
		},
		blobs:     map[int64]Logo{oldLogoID: {Filename: "old.png", ContentType: "image/png"}},
		nextLoc:   100,
		nextHours: 100,
		nextBlob:  100,
		nextProv:  100,
	}
	f.businesses = &BusinessRepoMock{
		CreateFunc: func(_ context.Context, b *Business) error {
			b.ID = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
			b.CreatedAt, b.UpdatedAt = time.Unix(1, 0), time.Unix(1, 0)
			f.bizs[b.ID] = *b
			f.mems[b.ID] = []Member{{BusinessID: b.ID, Subject: b.OwnerSubject, Role: core.RoleOwner, CreatedAt: b.CreatedAt}}
			return nil
		},
		GetFunc: func(_ context.Context, id string) (Business, error) {
			b, ok := f.bizs[id]
			if !ok {
				return Business{}, ErrBusinessNotFound
			}
			return b, nil
		},
		UpdateFunc: func(_ context.Context, id string, fn func(*Business) error) (Business, error) {
			b, ok := f.bizs[id]
			if !ok {
				return Business{}, ErrBusinessNotFound
			}
			if err := fn(&b); err != nil {
				return Business{}, err
			}
			f.bizs[id] = b
			return b, nil
		},
	}
	// locked runs check on the members of business id as the repository
	// does under the business's row lock.
	locked := func(id string, check func([]Member) error) error {
		if _, ok := f.bizs[id]; !ok {
			return ErrBusinessNotFound
		}
		return check(slices.Clone(f.mems[id]))
	}
	f.members = &MemberRepoMock{
		RoleFunc: func(_ context.Context, id, subject string) (core.Role, error) {
			m, _ := find(f.mems[id], subject)
			return m.Role, nil
		},
		ListFunc: func(_ context.Context, id string) ([]Member, error) {
			return slices.Clone(f.mems[id]), nil
		},
		AddFunc: func(_ context.Context, m *Member, check func([]Member) error) error {
			if err := locked(m.BusinessID, check); err != nil {
				return err
			}
			m.CreatedAt = time.Unix(100, 0)
			f.mems[m.BusinessID] = append(f.mems[m.BusinessID], *m)
			return nil
		},
		SetRoleFunc: func(_ context.Context, id, subject string, role core.Role, check func([]Member) error) (Member, error) {
			if err := locked(id, check); err != nil {
				return Member{}, err
			}
			i := slices.IndexFunc(f.mems[id], func(m Member) bool { return m.Subject == subject })
			if i < 0 {
				return Member{}, ErrMemberNotFound
			}
			f.mems[id][i].Role = role
			return f.mems[id][i], nil
		},
		RemoveFunc: func(_ context.Context, id, subject string, check func([]Member) error) error {
			if err := locked(id, check); err != nil {
				return err
			}
			i := slices.IndexFunc(f.mems[id], func(m Member) bool { return m.Subject == subject })
			if i < 0 {
				return ErrMemberNotFound
			}
			f.mems[id] = slices.Delete(f.mems[id], i, i+1)
			return nil
		},
	}
	f.locations = &LocationRepoMock{
		CreateFunc: func(_ context.Context, l *Location) error {
			f.nextLoc++
			l.ID = f.nextLoc
			f.locs[l.ID] = *l
			return nil
		},
		GetFunc: func(_ context.Context, id int64) (Location, error) {
			l, ok := f.locs[id]
			if !ok {
				return Location{}, ErrLocationNotFound
			}
			return l, nil
		},
		ListByBusinessFunc: func(_ context.Context, businessID string) ([]Location, error) {
			var ls []Location
			for _, l := range f.locs {
				if l.BusinessID == businessID {
					ls = append(ls, l)
				}
			}
			slices.SortFunc(ls, func(a, b Location) int { return int(a.ID - b.ID) })
			return ls, nil
		},
		UpdateFunc: func(_ context.Context, id int64, fn func(*Location) error) (Location, error) {
			l, ok := f.locs[id]
			if !ok {
				return Location{}, ErrLocationNotFound
			}
			if err := fn(&l); err != nil {
				return Location{}, err
			}
			f.locs[id] = l
			return l, nil
		},
	}
	f.providers = &ProviderRepoMock{
		CreateFunc: func(_ context.Context, p *Provider, locationID int64) error {
			f.nextProv++
			p.ID = f.nextProv
			f.provs[locationID] = append(f.provs[locationID], *p)
			return nil
		},
		ListByLocationFunc: func(_ context.Context, locationID int64) ([]Provider, error) {
			return f.provs[locationID], nil
		},
	}
	f.hours = &HoursRepoMock{
		ListFunc: func(_ context.Context, locationID int64) ([]Hours, error) {
			var hs []Hours
			for _, h := range f.hrs {
				if h.LocationID == locationID {
					hs = append(hs, h)
				}
			}
			slices.SortFunc(hs, func(a, b Hours) int { return int(a.ID - b.ID) })
			return hs, nil
		},
		AddFunc: func(_ context.Context, locationID int64, hs []Hours) ([]Hours, error) {
			for _, h := range hs {
				for _, cur := range f.hrs {
					if cur.LocationID == locationID && cur.Day == h.Day {
						return nil, ErrDuplicateDay.WithMessage("The location already has operating hours for %s", h.Day)
					}
				}
			}
			out := make([]Hours, len(hs))
			for i, h := range hs {
				f.nextHours++
				h.ID, h.LocationID = f.nextHours, locationID
				f.hrs[h.ID] = h
				out[i] = h
			}
			return out, nil
		},
		GetFunc: func(_ context.Context, id int64) (Hours, error) {
			h, ok := f.hrs[id]
			if !ok {
				return Hours{}, ErrHoursNotFound
			}
			return h, nil
		},
		UpdateFunc: func(_ context.Context, h Hours) (Hours, error) {
			if _, ok := f.hrs[h.ID]; !ok {
				return Hours{}, ErrHoursNotFound
			}
			for _, cur := range f.hrs {
				if cur.ID != h.ID && cur.LocationID == h.LocationID && cur.Day == h.Day {
					return Hours{}, ErrDayConflict
				}
			}
			f.hrs[h.ID] = h
			return h, nil
		},
		DeleteFunc: func(_ context.Context, id int64) error {
			if _, ok := f.hrs[id]; !ok {
				return ErrHoursNotFound
			}
			delete(f.hrs, id)
			return nil
		},
	}
	f.logos = &LogosMock{
		StoreFunc: func(_ context.Context, logo Logo) (int64, error) {
			f.nextBlob++
			f.blobs[f.nextBlob] = logo
			return f.nextBlob, nil
		},
		RemoveFunc: func(_ context.Context, blobID int64) error {
			delete(f.blobs, blobID)
			return nil
		},
		RemoveObjectFunc: func(context.Context, string, string) error { return nil },
	}
	// A logo's row names its object after its id, at the location of its
	// business that holds it.
	f.logoRows = &LogoRepoMock{DropFunc: func(_ context.Context, id int64) (DroppedLogo, bool, error) {
		if _, ok := f.blobs[id]; !ok {
			return DroppedLogo{}, false, nil
		}
		delete(f.blobs, id)
		d := DroppedLogo{BlobID: id, Container: "images", Object: fmt.Sprintf("logo-object-%d", id)}
		for _, l := range f.locs {
			if l.LogoBlobID == id || id == oldLogoID && l.ID == ownLocID {
				d.LocationID, d.BusinessID = fmt.Sprint(l.ID), l.BusinessID
			}
		}
		return d, true, nil
	}}
	f.tx = &TransactorMock{WithinTxFunc: func(ctx context.Context, fn func(context.Context, Repos) error) error {
		o := &outbox{}
		if err := fn(ctx, Repos{Businesses: f.businesses, Locations: f.locations, Hours: f.hours, Logos: f.logoRows, Outbox: o}); err != nil {
			return err
		}
		f.events = append(f.events, o.events...)
		return nil
	}}
	f.composeReads()
	f.svc = NewService(f.businesses, f.members, f.locations, f.providers, f.hours, f.logos, f.tx)
	return f
}

// composeReads builds the one-round-trip reads of the repositories out of
// the fakes above, calling their Func fields at call time: a test that
// replaces one of those (to inject a failure) reaches these reads too.
func (f *fixture) composeReads() {
	f.businesses.GetWithRoleFunc = func(ctx context.Context, id, subject string) (Business, core.Role, error) {
		b, err := f.businesses.Get(ctx, id)
		if err != nil {
			return Business{}, "", err
		}
		role, err := f.members.Role(ctx, b.ID, subject)
		return b, role, err
	}
	f.locations.GetWithRoleFunc = func(ctx context.Context, id int64, subject string) (Location, core.Role, error) {
		l, err := f.locations.Get(ctx, id)
		if err != nil {
			return Location{}, "", err
		}
		role, err := f.members.Role(ctx, l.BusinessID, subject)
		return l, role, err
	}
	f.locations.ListByBusinessForMemberFunc = func(ctx context.Context, id, subject string) ([]Location, bool, error) {
		role, err := f.members.Role(ctx, id, subject)
		if err != nil || role == "" {
			return nil, false, err
		}
		ls, err := f.locations.ListByBusiness(ctx, id)
		return ls, err == nil, err
	}
	// memberOf is false for a missing location, as in the repositories.
	memberOf := func(ctx context.Context, id int64, subject string) (bool, error) {
		_, role, err := f.locations.GetWithRole(ctx, id, subject)
		if errors.Is(err, ErrLocationNotFound) {
			return false, nil
		}
		return role != "", err
	}
	f.providers.ListByLocationForMemberFunc = func(ctx context.Context, id int64, subject string) ([]Provider, bool, error) {
		if ok, err := memberOf(ctx, id, subject); err != nil || !ok {
			return nil, false, err
		}
		ps, err := f.providers.ListByLocation(ctx, id)
		return ps, err == nil, err
	}
	f.hours.ListForMemberFunc = func(ctx context.Context, id int64, subject string) ([]Hours, bool, error) {
		if ok, err := memberOf(ctx, id, subject); err != nil || !ok {
			return nil, false, err
		}
		hs, err := f.hours.List(ctx, id)
		return hs, err == nil, err
	}
}

// outbox keeps the events of one transaction.
type outbox struct{ events []core.Event }

func (o *outbox) Emit(_ context.Context, e core.Event) error {
	o.events = append(o.events, e)
	return nil
}

// as returns a context whose caller is subject.
func as(subject string) context.Context {
	return core.WithActor(context.Background(), core.Actor{Subject: subject})
}

func ptr(s string) *string { return &s }

// wantErr fails the test unless err matches target.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
}

// wantMessage fails the test unless err's message holds every part.
func wantMessage(t *testing.T, err error, parts ...string) {
	t.Helper()
	var ce *core.Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *core.Error", err)
	}
	for _, p := range parts {
		if !strings.Contains(ce.Message, p) {
			t.Errorf("message %q does not mention %q", ce.Message, p)
		}
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// pngLogo is a small image logo.
func pngLogo() *Logo {
	body := []byte("\x89PNG\r\n\x1a\n....")
	return &Logo{Filename: "logo.png", ContentType: "image/png", Size: int64(len(body)), Body: body}
}
