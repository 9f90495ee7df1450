// Package event is the vocabulary of the events the service tells other
// systems about (thin events: ids and statuses, never patient data), and
// the dispatcher that delivers them from the outbox to webhook receivers
// and to a message stream.
package event

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Type names what happened.
type Type string

// The event types of the contract.
const (
	AppointmentBooked      Type = "appointment.booked"
	AppointmentCancelled   Type = "appointment.cancelled"
	AppointmentRescheduled Type = "appointment.rescheduled"
	BlobUploaded           Type = "blob.uploaded"
	BlobDeleted            Type = "blob.deleted"
	LocationCreated        Type = "location.created"
	LocationUpdated        Type = "location.updated"
	OperatingHoursChanged  Type = "operating_hours.changed"
	BusinessUpdated        Type = "business.updated"
)

// Types lists every event type, in the contract's order.
var Types = []Type{AppointmentBooked, AppointmentCancelled, AppointmentRescheduled,
	BlobUploaded, BlobDeleted, LocationCreated, LocationUpdated, OperatingHoursChanged, BusinessUpdated}

// All is the subscription pattern that matches every type.
const All = "*"

// ErrUnknownType is a subscription naming a type the service never emits.
var ErrUnknownType = &core.Error{Kind: core.KindInvalid, Code: "unknown_event_type", Message: "Unknown event type"}

// ParseTypes reads a subscription's comma-separated list of event types,
// or "*" for all of them. Blanks around names are ignored; an empty list,
// an unknown name or "*" beside names is ErrUnknownType naming the
// problem and the known types.
func ParseTypes(s string) ([]string, error) {
	if strings.TrimSpace(s) == All {
		return []string{All}, nil
	}
	known := make([]string, len(Types))
	for i, t := range Types {
		known[i] = string(t)
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !isType(name) {
			if name == "" {
				return nil, ErrUnknownType.WithMessage("Event types must be a comma-separated list of %s, or '*'", strings.Join(known, ", "))
			}
			return nil, ErrUnknownType.WithMessage("Unknown event type %q: use %s, or '*'", name, strings.Join(known, ", "))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

func isType(name string) bool {
	for _, t := range Types {
		if string(t) == name {
			return true
		}
	}
	return false
}

// Event is one change, as written to the outbox with the change itself.
type Event struct {
	ID         string // "evt_" and 32 hex digits
	Type       Type
	OccurredAt time.Time
	// BusinessID is the business the change belongs to; "" for none
	// (appointments, a blob of no location).
	BusinessID string
	// Data is one of AppointmentData, BlobData, LocationData or
	// BusinessData: ids and statuses only.
	Data any
}

// AppointmentData is the data of the appointment events.
type AppointmentData struct {
	AppointmentID string    `json:"appointmentId"`
	AgentID       string    `json:"agentId"`
	Status        string    `json:"status"`
	Start         time.Time `json:"start"`
	End           time.Time `json:"end"`
}

// BlobData is the data of the blob events: BusinessLocationID is the
// blob's businessLocationId as uploaded, nil for none.
type BlobData struct {
	BlobID             int64   `json:"blobId"`
	ContainerName      string  `json:"containerName"`
	BusinessLocationID *string `json:"businessLocationId"`
}

// LocationData is the data of the location and operating-hours events.
type LocationData struct {
	LocationID int64 `json:"locationId"`
}

// BusinessData is the data of business.updated.
type BusinessData struct {
	BusinessID string `json:"businessId"`
}

// New returns an event of type t that occurs now, with a fresh id.
func New(t Type, businessID string, data any) Event {
	return Event{ID: "evt_" + strings.ReplaceAll(core.NewUUID(), "-", ""), Type: t,
		OccurredAt: time.Now().UTC().Truncate(time.Millisecond), BusinessID: businessID, Data: data}
}

// Appointment returns an appointment event for what the EHR confirmed;
// businessID is the business the call acted for ("" none).
func Appointment(t Type, id, agentID, status string, start, end time.Time, businessID string) Event {
	return New(t, businessID, AppointmentData{AppointmentID: id, AgentID: agentID, Status: status, Start: start.UTC(), End: end.UTC()})
}

// Blob returns a blob event; locationID "" is a blob of no location, and
// businessID is the business of its location ("" for none).
func Blob(t Type, blobID int64, container string, locationID string, businessID string) Event {
	d := BlobData{BlobID: blobID, ContainerName: container}
	if locationID != "" {
		d.BusinessLocationID = &locationID
	}
	return New(t, businessID, d)
}

// Location returns a location or operating-hours event.
func Location(t Type, locationID int64, businessID string) Event {
	return New(t, businessID, LocationData{LocationID: locationID})
}

// Business returns business.updated.
func Business(businessID string) Event {
	return New(BusinessUpdated, businessID, BusinessData{BusinessID: businessID})
}

// body is the contract's JSON body of an event.
type body struct {
	ID         string  `json:"id"`
	Type       Type    `json:"type"`
	OccurredAt string  `json:"occurredAt"`
	BusinessID *string `json:"businessId"`
	Data       any     `json:"data"`
}

// Body returns the JSON body every receiver gets; it is written to the
// outbox once, and the same bytes are signed and sent on every attempt.
func (e Event) Body() ([]byte, error) {
	b := body{ID: e.ID, Type: e.Type, OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano), Data: e.Data}
	if e.BusinessID != "" {
		b.BusinessID = &e.BusinessID
	}
	if b.Data == nil {
		return nil, fmt.Errorf("event %s: no data", e.Type)
	}
	return json.Marshal(b)
}
