package business

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
)

// cleanupTimeout bounds the removal of a logo after a failed write; it runs
// even when the request's context is already cancelled.
const cleanupTimeout = 30 * time.Second

// Service holds the business use cases.
type Service struct {
	businesses BusinessRepo
	members    MemberRepo
	locations  LocationRepo
	providers  ProviderRepo
	hours      HoursRepo
	logos      Logos
	tx         Transactor
}

// NewService returns the business core. Changes go through tx, with their
// events; the repositories serve the reads.
func NewService(businesses BusinessRepo, members MemberRepo, locations LocationRepo, providers ProviderRepo, hours HoursRepo, logos Logos, tx Transactor) *Service {
	return &Service{businesses: businesses, members: members, locations: locations, providers: providers, hours: hours, logos: logos, tx: tx}
}

// ErrInvalidBusinessID is a business id that is not a UUID.
var ErrInvalidBusinessID = &core.Error{Kind: core.KindInvalid, Code: "invalid_id", Message: "The business id must be a UUID"}

// member loads business id and the caller's role in it, in one round trip;
// a caller who is not a member is told the business does not exist.
func (s *Service) member(ctx context.Context, id string) (Business, core.Role, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Business{}, "", core.ErrUnauthenticated
	}
	if !core.IsUUID(id) {
		return Business{}, "", ErrInvalidBusinessID
	}
	b, role, err := s.businesses.GetWithRole(ctx, strings.ToLower(id), actor.Subject)
	if err != nil {
		return Business{}, "", err
	}
	if role == "" {
		return Business{}, "", ErrBusinessNotFound
	}
	return b, role, nil
}

// managed loads business id when the caller may change it (owner, admin).
func (s *Service) managed(ctx context.Context, id string) (Business, error) {
	b, role, err := s.member(ctx, id)
	if err != nil {
		return Business{}, err
	}
	if !role.Manages() {
		return Business{}, core.ErrInsufficientRole.WithMessage("Your role (%s) may read this business but not change it", role)
	}
	return b, nil
}

// memberLocation loads location id and the caller's role in its business,
// in one round trip; a caller who is not a member is told the location
// does not exist.
func (s *Service) memberLocation(ctx context.Context, id int64) (Location, core.Role, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return Location{}, "", core.ErrUnauthenticated
	}
	if id <= 0 {
		return Location{}, "", ErrLocationNotFound
	}
	l, role, err := s.locations.GetWithRole(ctx, id, actor.Subject)
	if err != nil {
		return Location{}, "", err
	}
	if role == "" {
		return Location{}, "", ErrLocationNotFound
	}
	return l, role, nil
}

// managedLocation loads location id when the caller may change it.
func (s *Service) managedLocation(ctx context.Context, id int64) (Location, error) {
	l, role, err := s.memberLocation(ctx, id)
	if err != nil {
		return Location{}, err
	}
	if !role.Manages() {
		return Location{}, core.ErrInsufficientRole.WithMessage("Your role (%s) may read this location but not change it", role)
	}
	return l, nil
}

// AuthorizeLocationCreate reports whether the caller may add a location
// to business id (owner, admin), as CreateLocation would: the HTTP adapter
// asks before it reads the form, so that a stranger's or a staff member's
// logo is never read (CreateLocation checks again).
func (s *Service) AuthorizeLocationCreate(ctx context.Context, businessID string) error {
	_, err := s.managed(ctx, businessID)
	return err
}

// AuthorizeLocationUpdate reports whether the caller may change location
// id, as UpdateLocation would (see AuthorizeLocationCreate).
func (s *Service) AuthorizeLocationUpdate(ctx context.Context, id int64) error {
	_, err := s.managedLocation(ctx, id)
	return err
}

// Business returns business id.
func (s *Service) Business(ctx context.Context, id string) (Business, error) {
	b, _, err := s.member(ctx, id)
	return b, err
}

// EditBusiness applies a partial update to business id.
func (s *Service) EditBusiness(ctx context.Context, id string, e BusinessEdit) (Business, error) {
	if _, err := s.managed(ctx, id); err != nil {
		return Business{}, err
	}
	e = e.trimmed()
	if err := e.validate(); err != nil {
		return Business{}, err
	}
	var stored Business
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		var err error
		stored, err = r.Businesses.Update(ctx, strings.ToLower(id), func(b *Business) error {
			e.apply(b)
			return nil
		})
		if err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, core.BusinessEvent(stored.ID))
	})
	if err != nil {
		return Business{}, err
	}
	return stored, nil
}

// Locations returns the locations of business id, with the membership
// check in the same round trip.
func (s *Service) Locations(ctx context.Context, businessID string) ([]Location, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return nil, core.ErrUnauthenticated
	}
	if !core.IsUUID(businessID) {
		return nil, ErrInvalidBusinessID
	}
	ls, member, err := s.locations.ListByBusinessForMember(ctx, strings.ToLower(businessID), actor.Subject)
	if err != nil {
		return nil, err
	}
	if !member {
		return nil, ErrBusinessNotFound
	}
	return ls, nil
}

// CreateLocation adds a location, with an optional logo, to business id.
// A failure leaves neither a location nor a logo behind.
func (s *Service) CreateLocation(ctx context.Context, businessID string, in LocationInput, logo *Logo) (Location, error) {
	b, err := s.managed(ctx, businessID)
	if err != nil {
		return Location{}, err
	}
	in = in.trimmed()
	if err := in.validate(true); err != nil {
		return Location{}, err
	}
	if err := checkLogo(logo); err != nil {
		return Location{}, err
	}
	l := Location{BusinessID: b.ID}
	in.apply(&l)
	if logo != nil {
		if l.LogoBlobID, err = s.logos.Store(ctx, *logo); err != nil {
			return Location{}, fmt.Errorf("store logo: %w", err)
		}
	}
	err = s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		if err := r.Locations.Create(ctx, &l); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, core.LocationEvent(core.LocationCreated, l.ID, l.BusinessID))
	})
	if err != nil {
		s.removeLogo(ctx, l.LogoBlobID)
		return Location{}, err
	}
	return l, nil
}

// UpdateLocation applies a partial update to location id; a new logo
// replaces the old one, whose blob entry is deleted in the same
// transaction, whoever uploaded it (the caller manages the location that
// pointed at it), with its blob.deleted event; its object goes after the
// commit, or, if that fails, with the orphan sweeper.
func (s *Service) UpdateLocation(ctx context.Context, id int64, in LocationInput, logo *Logo) (Location, error) {
	if _, err := s.managedLocation(ctx, id); err != nil {
		return Location{}, err
	}
	in = in.trimmed()
	if err := in.validate(false); err != nil {
		return Location{}, err
	}
	if err := checkLogo(logo); err != nil {
		return Location{}, err
	}
	var newLogo, oldLogo int64
	if logo != nil {
		var err error
		if newLogo, err = s.logos.Store(ctx, *logo); err != nil {
			return Location{}, fmt.Errorf("store logo: %w", err)
		}
	}
	var (
		l       Location
		dropped DroppedLogo
		found   bool
	)
	err := s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		var err error
		oldLogo, found = 0, false
		l, err = r.Locations.Update(ctx, id, func(l *Location) error {
			in.apply(l)
			if newLogo != 0 {
				oldLogo, l.LogoBlobID = l.LogoBlobID, newLogo
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := r.Outbox.Emit(ctx, core.LocationEvent(core.LocationUpdated, id, l.BusinessID)); err != nil {
			return err
		}
		if oldLogo == 0 || oldLogo == newLogo {
			return nil
		}
		if dropped, found, err = r.Logos.Drop(ctx, oldLogo); err != nil || !found {
			return err
		}
		return r.Outbox.Emit(ctx, core.BlobEvent(core.BlobDeleted, dropped.BlobID, dropped.Container, dropped.LocationID, dropped.BusinessID))
	})
	if err != nil {
		s.removeLogo(ctx, newLogo)
		return Location{}, err
	}
	if found {
		s.removeLogoObject(ctx, dropped)
	}
	return l, nil
}

// Providers returns the providers affiliated with location id, with the
// membership check in the same round trip.
func (s *Service) Providers(ctx context.Context, locationID int64) ([]Provider, error) {
	return memberList(ctx, locationID, s.providers.ListByLocationForMember)
}

// Hours returns the operating hours of location id, Monday first, with the
// membership check in the same round trip.
func (s *Service) Hours(ctx context.Context, locationID int64) ([]Hours, error) {
	return memberList(ctx, locationID, s.hours.ListForMember)
}

// memberList reads a list of location id with list when the caller is a
// member of the location's business; a caller who is not a member is told
// the location does not exist.
func memberList[T any](ctx context.Context, id int64, list func(context.Context, int64, string) ([]T, bool, error)) ([]T, error) {
	actor, ok := core.ActorFrom(ctx)
	if !ok {
		return nil, core.ErrUnauthenticated
	}
	if id <= 0 {
		return nil, ErrLocationNotFound
	}
	out, member, err := list(ctx, id, actor.Subject)
	if err != nil {
		return nil, err
	}
	if !member {
		return nil, ErrLocationNotFound
	}
	return out, nil
}

// AddHours adds entries to location id: all of them or none. A day given
// twice, or one the location already has, is a conflict.
func (s *Service) AddHours(ctx context.Context, locationID int64, in []HoursInput) ([]Hours, error) {
	l, err := s.managedLocation(ctx, locationID)
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, ErrInvalid.WithMessage("Validation failed: operatingHours must hold at least one entry")
	}
	if len(in) > 7 {
		return nil, ErrInvalid.WithMessage("Validation failed: operatingHours holds at most 7 entries, one per day")
	}
	var p problems
	hs := make([]Hours, len(in))
	for i, h := range in {
		hs[i] = h.parse(fmt.Sprintf("operatingHours[%d]", i), &p)
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	seen := map[time.Weekday]bool{}
	for _, h := range hs {
		if seen[h.Day] {
			return nil, ErrDuplicateDay.WithMessage("%s is given more than once in the request", h.Day)
		}
		seen[h.Day] = true
	}
	var added []Hours
	err = s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		var err error
		if added, err = r.Hours.Add(ctx, locationID, hs); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, core.LocationEvent(core.OperatingHoursChanged, locationID, l.BusinessID))
	})
	if err != nil {
		return nil, err
	}
	return added, nil
}

// UpdateHours changes entry id.
func (s *Service) UpdateHours(ctx context.Context, id int64, in HoursInput) (Hours, error) {
	cur, l, err := s.managedHours(ctx, id)
	if err != nil {
		return Hours{}, err
	}
	var p problems
	h := in.parse("", &p)
	if err := p.err(); err != nil {
		return Hours{}, err
	}
	h.ID, h.LocationID = cur.ID, cur.LocationID
	var stored Hours
	err = s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		var err error
		if stored, err = r.Hours.Update(ctx, h); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, core.LocationEvent(core.OperatingHoursChanged, stored.LocationID, l.BusinessID))
	})
	if err != nil {
		return Hours{}, err
	}
	return stored, nil
}

// DeleteHours removes entry id.
func (s *Service) DeleteHours(ctx context.Context, id int64) error {
	h, l, err := s.managedHours(ctx, id)
	if err != nil {
		return err
	}
	return s.tx.WithinTx(ctx, func(ctx context.Context, r Repos) error {
		if err := r.Hours.Delete(ctx, id); err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, core.LocationEvent(core.OperatingHoursChanged, h.LocationID, l.BusinessID))
	})
}

// managedHours loads entry id, and its location, when the caller may
// change that location.
func (s *Service) managedHours(ctx context.Context, id int64) (Hours, Location, error) {
	if _, ok := core.ActorFrom(ctx); !ok {
		return Hours{}, Location{}, core.ErrUnauthenticated
	}
	if id <= 0 {
		return Hours{}, Location{}, ErrHoursNotFound.WithMessage("Operating hours entry %d not found", id)
	}
	h, err := s.hours.Get(ctx, id)
	if errors.Is(err, ErrHoursNotFound) {
		return Hours{}, Location{}, ErrHoursNotFound.WithMessage("Operating hours entry %d not found", id)
	}
	if err != nil {
		return Hours{}, Location{}, err
	}
	l, err := s.managedLocation(ctx, h.LocationID)
	if err != nil {
		// Another business's entry is reported as missing; a failed
		// lookup or a staff member's request is not.
		if errors.Is(err, ErrLocationNotFound) {
			return Hours{}, Location{}, ErrHoursNotFound.WithMessage("Operating hours entry %d not found", id)
		}
		return Hours{}, Location{}, err
	}
	return h, l, nil
}

// CreateBusiness creates a business whose first owner member is owner
// (admin CLI).
func (s *Service) CreateBusiness(ctx context.Context, name, email, owner string) (Business, error) {
	e := BusinessEdit{Name: &name, Email: &email}.trimmed()
	var p problems
	if *e.Name == "" {
		p.add("name", "is required")
	}
	if *e.Email == "" {
		p.add("email", "is required")
	}
	if strings.TrimSpace(owner) == "" {
		p.add("owner", "is required")
	}
	if err := p.err(); err != nil {
		return Business{}, err
	}
	if err := e.validate(); err != nil {
		return Business{}, err
	}
	b := Business{OwnerSubject: strings.TrimSpace(owner)}
	e.apply(&b)
	if err := s.businesses.Create(ctx, &b); err != nil {
		return Business{}, err
	}
	return b, nil
}

// CreateProvider creates a provider affiliated with location locationID
// (admin CLI).
func (s *Service) CreateProvider(ctx context.Context, pr Provider, locationID int64) (Provider, error) {
	pr.FirstName, pr.LastName = strings.TrimSpace(pr.FirstName), strings.TrimSpace(pr.LastName)
	pr.Email, pr.TelehealthLink = strings.TrimSpace(pr.Email), strings.TrimSpace(pr.TelehealthLink)
	var p problems
	p.check("first", &pr.FirstName, true, func(string) bool { return true }, "")
	p.check("last", &pr.LastName, true, func(string) bool { return true }, "")
	p.text("first", &pr.FirstName, 100)
	p.text("last", &pr.LastName, 100)
	p.check("email", &pr.Email, true, core.ValidEmail, "must be a valid e-mail address")
	p.check("telehealth", &pr.TelehealthLink, false, ValidURL, "must be an http(s) URL")
	if err := p.err(); err != nil {
		return Provider{}, err
	}
	if _, err := s.locations.Get(ctx, locationID); err != nil {
		return Provider{}, err
	}
	if err := s.providers.Create(ctx, &pr, locationID); err != nil {
		return Provider{}, err
	}
	return pr, nil
}
