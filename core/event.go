package core

import (
	"context"
	"strings"
	"time"
)

// EventType names what happened, in the events the service tells other
// systems about (thin events: ids and statuses, never patient data).
type EventType string

// The event types of the contract.
const (
	AppointmentBooked      EventType = "appointment.booked"
	AppointmentCancelled   EventType = "appointment.cancelled"
	AppointmentRescheduled EventType = "appointment.rescheduled"
	// AppointmentStatusChanged is a status change other than a booking or
	// a cancellation (checked_in, fulfilled, no_show, pending), which only
	// the EHR itself makes.
	AppointmentStatusChanged EventType = "appointment.status_changed"
	BlobUploaded             EventType = "blob.uploaded"
	BlobDeleted              EventType = "blob.deleted"
	LocationCreated          EventType = "location.created"
	LocationUpdated          EventType = "location.updated"
	OperatingHoursChanged    EventType = "operating_hours.changed"
	BusinessUpdated          EventType = "business.updated"
)

// WebhookTest is the event POST /api/v1/webhooks/{id}/test delivers to
// that one subscription: never emitted by a change, never subscribed to
// (it is not in EventTypes), never published to the message stream.
const WebhookTest EventType = "webhook.test"

// EventTypes lists every event type, in the contract's order.
var EventTypes = []EventType{AppointmentBooked, AppointmentCancelled, AppointmentRescheduled, AppointmentStatusChanged,
	BlobUploaded, BlobDeleted, LocationCreated, LocationUpdated, OperatingHoursChanged, BusinessUpdated}

// Event is one change, which a core writes to the outbox in the
// transaction of the change itself. Its wire form (the webhook body) is
// the outbox adapter's.
type Event struct {
	ID         string // "evt_" and 32 hex digits
	Type       EventType
	OccurredAt time.Time
	// BusinessID is the business the change belongs to; "" for none
	// (appointments of no acting business, a blob of no location).
	BusinessID string
	// Data is one of AppointmentData, BlobData, LocationData or
	// BusinessData: ids and statuses only.
	Data any
}

// AppointmentData is the data of the appointment events.
type AppointmentData struct {
	AppointmentID string
	AgentID       string
	Status        string
	Start         time.Time
	End           time.Time
	Origin        Origin
}

// Origin tells where an appointment change was made.
type Origin string

// The origins of appointment changes.
const (
	OriginAPI Origin = "api" // through Carebridge's API
	OriginEHR Origin = "ehr" // in the EHR itself (its own screens)
)

// BlobData is the data of the blob events: BusinessLocationID is the
// blob's businessLocationId as uploaded, nil for none.
type BlobData struct {
	BlobID             int64
	ContainerName      string
	BusinessLocationID *string
}

// LocationData is the data of the location and operating-hours events.
type LocationData struct {
	LocationID int64
}

// BusinessData is the data of business.updated.
type BusinessData struct {
	BusinessID string
}

// WebhookTestData is the data of webhook.test: the subscription tested.
type WebhookTestData struct {
	WebhookID string
}

// NewEvent returns an event of type t that occurs now, with a fresh id.
func NewEvent(t EventType, businessID string, data any) Event {
	return Event{ID: "evt_" + strings.ReplaceAll(NewUUID(), "-", ""), Type: t,
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond), BusinessID: businessID, Data: data}
}

// AppointmentEvent returns an appointment event for a change made with
// origin o; businessID is the business it belongs to ("" none).
func AppointmentEvent(t EventType, o Origin, id, agentID, status string, start, end time.Time, businessID string) Event {
	return NewEvent(t, businessID, AppointmentData{AppointmentID: id, AgentID: agentID, Status: status,
		Start: start.UTC(), End: end.UTC(), Origin: o})
}

// BlobEvent returns a blob event; locationID "" is a blob of no location,
// and businessID is the business of its location ("" for none).
func BlobEvent(t EventType, blobID int64, container string, locationID string, businessID string) Event {
	d := BlobData{BlobID: blobID, ContainerName: container}
	if locationID != "" {
		d.BusinessLocationID = &locationID
	}
	return NewEvent(t, businessID, d)
}

// LocationEvent returns a location or operating-hours event.
func LocationEvent(t EventType, locationID int64, businessID string) Event {
	return NewEvent(t, businessID, LocationData{LocationID: locationID})
}

// BusinessEvent returns business.updated.
func BusinessEvent(businessID string) Event {
	return NewEvent(BusinessUpdated, businessID, BusinessData{BusinessID: businessID})
}

// Outbox writes events in the transaction of the change they tell of
// (a core's Transactor gives it among its repositories), so an event is
// committed if and only if its change is.
type Outbox interface {
	Emit(ctx context.Context, e Event) error
}
