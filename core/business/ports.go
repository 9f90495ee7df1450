package business

import (
	"context"

	"github.com/carebridge/carebridge/core"
)

//go:generate go tool moq -rm -out ports_moq_test.go . BusinessRepo MemberRepo LocationRepo ProviderRepo HoursRepo LogoRepo Logos Transactor

// BusinessRepo keeps businesses.
type BusinessRepo interface {
	// Create stores b, sets its ID and times, and makes b.OwnerSubject its
	// first owner member, in one transaction.
	Create(ctx context.Context, b *Business) error
	// Get returns business id; a missing one is ErrBusinessNotFound.
	Get(ctx context.Context, id string) (Business, error)
	// GetWithRole returns business id and subject's role in it ("" when
	// subject is not a member) in one round trip; a missing business is
	// ErrBusinessNotFound.
	GetWithRole(ctx context.Context, id, subject string) (Business, core.Role, error)
	// Update applies fn to business id under a row lock and stores the
	// result unless fn fails.
	Update(ctx context.Context, id string, fn func(*Business) error) (Business, error)
}

// MemberRepo keeps the members of businesses. Add, SetRole and Remove each
// lock the business's row, read its members, and call check with them in
// the same transaction: a change happens only when check allows it, and
// concurrent changes of one business are checked one after the other (two
// owners demoting each other cannot both succeed). A failing check's error
// is returned as is. A missing business is ErrBusinessNotFound.
type MemberRepo interface {
	// Role returns subject's role in business id; "" when subject is not
	// a member (or there is no such business).
	Role(ctx context.Context, businessID, subject string) (core.Role, error)
	// List returns the members of business id, oldest first.
	List(ctx context.Context, businessID string) ([]Member, error)
	// Add stores m and sets its CreatedAt; an existing member is
	// ErrMemberExists.
	Add(ctx context.Context, m *Member, check func(members []Member) error) error
	// SetRole gives member subject the role and returns it.
	SetRole(ctx context.Context, businessID, subject string, role core.Role, check func(members []Member) error) (Member, error)
	// Remove removes member subject.
	Remove(ctx context.Context, businessID, subject string, check func(members []Member) error) error
}

// LocationRepo keeps business locations.
type LocationRepo interface {
	// Create stores l and sets its ID and times. When l.LogoBlobID is set,
	// that blob entry is tied to the new location in the same transaction.
	Create(ctx context.Context, l *Location) error
	// Get returns location id; a missing one is ErrLocationNotFound.
	Get(ctx context.Context, id int64) (Location, error)
	// GetWithRole returns location id and subject's role in its business
	// ("" when subject is not a member) in one round trip; a missing
	// location is ErrLocationNotFound.
	GetWithRole(ctx context.Context, id int64, subject string) (Location, core.Role, error)
	// ListByBusiness returns the business's locations by id.
	ListByBusiness(ctx context.Context, businessID string) ([]Location, error)
	// ListByBusinessForMember returns the business's locations by id when
	// subject is a member of it, in one round trip unless there are none;
	// member is false otherwise, and for a missing business.
	ListByBusinessForMember(ctx context.Context, businessID, subject string) (ls []Location, member bool, err error)
	// Update applies fn to location id under a row lock and stores the
	// result unless fn fails; a new LogoBlobID is tied to the location.
	Update(ctx context.Context, id int64, fn func(*Location) error) (Location, error)
}

// ProviderRepo keeps providers and their affiliations with locations.
type ProviderRepo interface {
	// Create stores p, affiliated with location locationID, and sets its ID.
	Create(ctx context.Context, p *Provider, locationID int64) error
	// ListByLocation returns the providers affiliated with the location.
	ListByLocation(ctx context.Context, locationID int64) ([]Provider, error)
	// ListByLocationForMember returns the providers affiliated with the
	// location when subject is a member of its business, in one round trip
	// unless there are none; member is false otherwise, and for a missing
	// location.
	ListByLocationForMember(ctx context.Context, locationID int64, subject string) (ps []Provider, member bool, err error)
}

// HoursRepo keeps operating hours. One entry per location and day is a
// database constraint, so it holds under concurrent requests.
type HoursRepo interface {
	// List returns the location's entries, Monday first.
	List(ctx context.Context, locationID int64) ([]Hours, error)
	// ListForMember returns the location's entries, Monday first, when
	// subject is a member of its business, in one round trip unless there
	// are none; member is false otherwise, and for a missing location.
	ListForMember(ctx context.Context, locationID int64, subject string) (hs []Hours, member bool, err error)
	// Add stores every entry or none; a day the location already has is
	// ErrDuplicateDay naming that day.
	Add(ctx context.Context, locationID int64, hs []Hours) ([]Hours, error)
	// Get returns entry id; a missing one is ErrHoursNotFound.
	Get(ctx context.Context, id int64) (Hours, error)
	// Update stores h; a day another entry of the location has is
	// ErrDayConflict.
	Update(ctx context.Context, h Hours) (Hours, error)
	// Delete removes entry id; a missing one is ErrHoursNotFound.
	Delete(ctx context.Context, id int64) error
}

// Transactor runs a change and its events as one transaction: fn's
// writes through r, events included, commit together or not at all.
type Transactor interface {
	WithinTx(ctx context.Context, fn func(ctx context.Context, r Repos) error) error
}

// Repos are the repositories of one transaction.
type Repos struct {
	Businesses BusinessRepo
	Locations  LocationRepo
	Hours      HoursRepo
	Logos      LogoRepo
	Outbox     core.Outbox
}

// LogoRepo removes the blob entries of logos that no location refers to
// any more, in the transaction that replaced them.
type LogoRepo interface {
	// Drop deletes the blob entry blobID and returns what it named; found
	// is false when there is none.
	Drop(ctx context.Context, blobID int64) (logo DroppedLogo, found bool, err error)
}

// DroppedLogo is the blob entry of a replaced logo, deleted with the change
// that replaced it: its object is removed after the change commits.
type DroppedLogo struct {
	BlobID     int64
	Container  string // the object's container
	Object     string // the object's name in the store
	LocationID string // the entry's business_location_id
	BusinessID string // the business of that location, "" when none
}

// Logos stores location logos as blob entries in container images; app
// implements it with the storage core.
type Logos interface {
	// Store keeps logo as a blob uploaded by the caller in ctx and returns
	// the blob entry's id.
	Store(ctx context.Context, logo Logo) (int64, error)
	// Remove deletes the object and row of a logo that no location refers
	// to (the caller stored it and the change that was to use it failed).
	Remove(ctx context.Context, blobID int64) error
	// RemoveObject deletes the object of a logo whose row was dropped
	// (LogoRepo.Drop), whoever uploaded it.
	RemoveObject(ctx context.Context, container, object string) error
}
