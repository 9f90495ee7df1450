package postgres

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The contract's JSON body of an event, as the outbox stores it and every
// receiver gets it (webhooks and NATS send the stored bytes as they are).
// These shapes are the wire format: rows already in the outbox are sent as
// stored, so a change here is a change of the contract.
type (
	eventJSON struct {
		ID         string  `json:"id"`
		Type       string  `json:"type"`
		OccurredAt string  `json:"occurredAt"`
		BusinessID *string `json:"businessId"`
		Data       any     `json:"data"`
	}
	appointmentJSON struct {
		AppointmentID string    `json:"appointmentId"`
		AgentID       string    `json:"agentId"`
		Status        string    `json:"status"`
		Start         time.Time `json:"start"`
		End           time.Time `json:"end"`
		Origin        string    `json:"origin"`
	}
	blobEventJSON struct {
		BlobID             int64   `json:"blobId"`
		ContainerName      string  `json:"containerName"`
		BusinessLocationID *string `json:"businessLocationId"`
	}
	locationEventJSON struct {
		LocationID int64 `json:"locationId"`
	}
	businessEventJSON struct {
		BusinessID string `json:"businessId"`
	}
	webhookTestJSON struct {
		WebhookID string `json:"webhookId"`
	}
)

// eventBody returns the JSON body of e: written to the outbox once, and
// the same bytes signed and sent on every attempt.
func eventBody(e core.Event) ([]byte, error) {
	b := eventJSON{ID: e.ID, Type: string(e.Type), OccurredAt: e.OccurredAt.UTC().Format(time.RFC3339Nano)}
	if e.BusinessID != "" {
		b.BusinessID = &e.BusinessID
	}
	switch d := e.Data.(type) {
	case core.AppointmentData:
		b.Data = appointmentJSON{AppointmentID: d.AppointmentID, AgentID: d.AgentID, Status: d.Status, Start: d.Start, End: d.End,
			Origin: string(d.Origin)}
	case core.BlobData:
		b.Data = blobEventJSON{BlobID: d.BlobID, ContainerName: d.ContainerName, BusinessLocationID: d.BusinessLocationID}
	case core.LocationData:
		b.Data = locationEventJSON{LocationID: d.LocationID}
	case core.BusinessData:
		b.Data = businessEventJSON{BusinessID: d.BusinessID}
	case core.WebhookTestData:
		b.Data = webhookTestJSON{WebhookID: d.WebhookID}
	default:
		return nil, fmt.Errorf("event %s: no data of a known kind (%T)", e.Type, e.Data)
	}
	return json.Marshal(b)
}
