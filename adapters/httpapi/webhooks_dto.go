package httpapi

import (
	"time"

	"github.com/carebridge/carebridge/core/event"
)

// The wire shapes of /api/v1/webhooks.

// webhookRequest is the body of POST /api/v1/webhooks.
type webhookRequest struct {
	URL         string   `json:"url"`
	Events      []string `json:"events"`
	Description string   `json:"description"`
}

// webhookPatch is the body of PATCH /api/v1/webhooks/{id}: absent fields
// stay as they are.
type webhookPatch struct {
	URL         *string   `json:"url"`
	Events      *[]string `json:"events"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// replayRequest is the body of POST /api/v1/webhooks/{id}/replay.
type replayRequest struct {
	Since string `json:"since"`
	Until string `json:"until"`
}

// webhookResponse is a subscription; Secret only when it was just made.
type webhookResponse struct {
	ID             string    `json:"id"`
	URL            string    `json:"url"`
	Events         []string  `json:"events"`
	Description    string    `json:"description"`
	BusinessID     string    `json:"businessId"`
	Enabled        bool      `json:"enabled"`
	DisabledReason *string   `json:"disabledReason"`
	Secret         string    `json:"secret,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	UpdatedAt      time.Time `json:"updatedAt"`
}

func newWebhookResponse(s event.Subscription) webhookResponse {
	out := webhookResponse{ID: s.ID, URL: s.URL, Events: s.Types, Description: s.Description, BusinessID: s.BusinessID,
		Enabled: s.Enabled, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC()}
	if out.Events == nil {
		out.Events = []string{}
	}
	if s.DisabledReason != "" {
		out.DisabledReason = &s.DisabledReason
	}
	return out
}

type secretResponse struct {
	Secret string `json:"secret"`
}

// acceptedResponse answers a retry or replay: how many deliveries were
// queued.
type acceptedResponse struct {
	Queued int `json:"queued"`
}

// testResponse answers a test: its event's id (the webhook-id to expect).
type testResponse struct {
	Queued  int    `json:"queued"`
	EventID string `json:"eventId"`
}

// deliveryStatus is the contract's name of a stored state.
var deliveryStatus = map[event.State]string{event.Pending: "pending", event.Delivered: "succeeded", event.Failed: "failed"}

// deliveryResponse is one row of a subscription's delivery log: no body,
// no patient data.
type deliveryResponse struct {
	ID            int64      `json:"id"`
	EventID       string     `json:"eventId"`
	Type          string     `json:"type"`
	Status        string     `json:"status"`
	Attempts      int        `json:"attempts"`
	LastStatus    *int       `json:"lastStatus"`
	LastError     *string    `json:"lastError"`
	NextAttemptAt *time.Time `json:"nextAttemptAt"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
}

func newDeliveryResponse(d event.DeliveryRecord) deliveryResponse {
	out := deliveryResponse{ID: d.ID, EventID: d.EventID, Type: string(d.Type), Status: deliveryStatus[d.State],
		Attempts: d.Attempts, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
	if d.LastStatus != 0 {
		out.LastStatus = &d.LastStatus
	}
	if d.LastError != "" {
		out.LastError = &d.LastError
	}
	if d.NextAttemptAt != nil {
		t := d.NextAttemptAt.UTC()
		out.NextAttemptAt = &t
	}
	return out
}

func newWebhookPage[A, B any](p event.Page[A], conv func(A) B) pageResponse[B] {
	out := pageResponse[B]{Items: make([]B, len(p.Items)), TotalCount: p.TotalCount, Page: p.Page, Limit: p.Limit}
	for i, it := range p.Items {
		out.Items[i] = conv(it)
	}
	return out
}
