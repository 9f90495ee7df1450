// Package ports holds the driving ports: the use cases that the HTTP
// adapter (and the CLI) call. The cores implement them; app wires them.
package ports

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/event"
	"github.com/carebridge/carebridge/core/storage"
)

// Storage is the blob-storage use cases (core/storage.Service).
type Storage interface {
	Upload(ctx context.Context, in storage.UploadInput) (storage.Blob, error)
	Metadata(ctx context.Context, id int64) (storage.Blob, error)
	Download(ctx context.Context, id int64, r *storage.ByteRange) (*storage.Download, error)
	Delete(ctx context.Context, id int64) error
}

var _ Storage = (*storage.Service)(nil)

// Business is the business-management use cases (core/business.Service).
type Business interface {
	Business(ctx context.Context, id string) (business.Business, error)
	EditBusiness(ctx context.Context, id string, e business.BusinessEdit) (business.Business, error)
	Locations(ctx context.Context, businessID string) ([]business.Location, error)
	// AuthorizeLocationCreate and AuthorizeLocationUpdate say whether the
	// caller may create or change the location, before its form is read.
	AuthorizeLocationCreate(ctx context.Context, businessID string) error
	AuthorizeLocationUpdate(ctx context.Context, id int64) error
	CreateLocation(ctx context.Context, businessID string, in business.LocationInput, logo *business.Logo) (business.Location, error)
	UpdateLocation(ctx context.Context, id int64, in business.LocationInput, logo *business.Logo) (business.Location, error)
	Providers(ctx context.Context, locationID int64) ([]business.Provider, error)
	Hours(ctx context.Context, locationID int64) ([]business.Hours, error)
	AddHours(ctx context.Context, locationID int64, in []business.HoursInput) ([]business.Hours, error)
	UpdateHours(ctx context.Context, id int64, in business.HoursInput) (business.Hours, error)
	DeleteHours(ctx context.Context, id int64) error
	Members(ctx context.Context, businessID string) ([]business.Member, error)
	AddMember(ctx context.Context, businessID, subject string, role core.Role) (business.Member, error)
	ChangeMemberRole(ctx context.Context, businessID, subject string, role core.Role) (business.Member, error)
	RemoveMember(ctx context.Context, businessID, subject string) error
}

var _ Business = (*business.Service)(nil)

// Search is the EHR search gateway (core/ehr.Service).
type Search interface {
	Search(ctx context.Context, r ehr.SearchRequest) (*ehr.SearchResult, error)
}

var _ Search = (*ehr.Service)(nil)

// Tenancy resolves the business a search, appointment, agent, person-link
// or webhook request acts for (core/ehr.Tenancy): the caller names it in
// what it asks of the use case.
type Tenancy interface {
	Act(ctx context.Context, requested string, use ehr.Use) (string, error)
}

var _ Tenancy = (*ehr.Tenancy)(nil)

// Scheduling is the appointment and agent use cases (core/ehr.Scheduling).
type Scheduling interface {
	Book(ctx context.Context, r ehr.BookingRequest) (ehr.Booked, error)
	Appointments(ctx context.Context, f ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error)
	Cancel(ctx context.Context, business, id, reason string) (ehr.Appointment, error)
	Reschedule(ctx context.Context, r ehr.RescheduleRequest) (ehr.Appointment, error)
	Agents(ctx context.Context, f ehr.AgentFilter) (ehr.Page[ehr.Agent], error)
	Agent(ctx context.Context, business, id string) (ehr.Agent, error)
	Availability(ctx context.Context, r ehr.AvailabilityRequest) (ehr.Availability, error)
}

var _ Scheduling = (*ehr.Scheduling)(nil)

// Links is the person-links use cases (core/ehr.Links): a member's
// decision that two EHR records are, or are not, the same person.
type Links interface {
	Create(ctx context.Context, r ehr.LinkRequest) (ehr.PersonLink, error)
	List(ctx context.Context, business string, p ehr.PageRequest) (ehr.Page[ehr.PersonLink], error)
	Delete(ctx context.Context, business, id string) (ehr.PersonLink, error)
}

var _ Links = (*ehr.Links)(nil)

// Webhooks is the use case of the webhooks a practice manages itself
// (core/event.Manager): every call acts for one business, the acting one.
type Webhooks interface {
	Create(ctx context.Context, in event.NewWebhook) (event.Created, error)
	List(ctx context.Context, business string, p event.PageRequest) (event.Page[event.Subscription], error)
	Get(ctx context.Context, business, id string) (event.Subscription, error)
	Update(ctx context.Context, business, id string, e event.WebhookEdit) (event.Subscription, error)
	Delete(ctx context.Context, business, id string) error
	RotateSecret(ctx context.Context, business, id string) (string, error)
	Deliveries(ctx context.Context, business, id string, state event.State, p event.PageRequest) (event.Page[event.DeliveryRecord], error)
	Retry(ctx context.Context, business, id string, delivery int64) error
	Replay(ctx context.Context, business, id string, since, until time.Time) (int, error)
	Test(ctx context.Context, business, id string) (core.Event, error)
}

var _ Webhooks = (*event.Manager)(nil)
