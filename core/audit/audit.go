// Package audit is the audit trail's domain: the event recorded for every
// request that touches patient data (blob, search and appointment
// endpoints) and its outcome rules. It imports only the standard library
// and core. The hash chain that makes the trail tamper-evident, and its
// canonical form, belong to the store that writes it (adapters/postgres).
//
// An event never holds patient data: no names, birth dates, contact
// details, query text, filenames or EHR identifiers other than the ids
// Carebridge itself answers with.
package audit

import (
	"net/http"
	"time"

	"github.com/carebridge/carebridge/core"
)

// Action is what a request did, one per audited endpoint.
type Action string

// The audited actions.
const (
	BlobUpload            Action = "blob.upload"
	BlobDownload          Action = "blob.download"
	BlobMetadata          Action = "blob.metadata"
	BlobDelete            Action = "blob.delete"
	PatientSearch         Action = "patient.search"
	AppointmentCreate     Action = "appointment.create"
	AppointmentList       Action = "appointment.list"
	AppointmentCancel     Action = "appointment.cancel"
	AppointmentReschedule Action = "appointment.reschedule"
	PersonLink            Action = "person.link"
	PersonUnlink          Action = "person.unlink"
	// The changes of the webhooks a practice manages (the contract names
	// none; they follow person links: each change commits its event).
	WebhookCreate       Action = "webhook.create"
	WebhookUpdate       Action = "webhook.update"
	WebhookDelete       Action = "webhook.delete"
	WebhookRotateSecret Action = "webhook.rotate_secret"
	WebhookRetry        Action = "webhook.retry"
	WebhookReplay       Action = "webhook.replay"
	WebhookTest         Action = "webhook.test"
)

// Actions lists every action.
var Actions = []Action{BlobUpload, BlobDownload, BlobMetadata, BlobDelete, PatientSearch,
	AppointmentCreate, AppointmentList, AppointmentCancel, AppointmentReschedule, PersonLink, PersonUnlink,
	WebhookCreate, WebhookUpdate, WebhookDelete, WebhookRotateSecret, WebhookRetry, WebhookReplay, WebhookTest}

// ErrUnavailable is a request refused because its audit event could not
// be written: nothing was done.
var ErrUnavailable = &core.Error{Kind: core.KindUnavailable, Code: "audit_unavailable",
	Message: "The audit trail cannot be written; nothing was done, try again later"}

// Outcome sums up the status a request was answered with.
type Outcome string

// The outcomes.
const (
	Success Outcome = "success" // 2xx
	Denied  Outcome = "denied"  // 401, 403, 404
	Failed  Outcome = "error"   // anything else
	// Started is not an answer: a change about to be made in an EHR,
	// recorded before the EHR is called, in addition to the request's
	// final event. Its status is 0.
	Started Outcome = "started"
)

// OutcomeOf is the outcome of an answer with the given HTTP status.
func OutcomeOf(status int) Outcome {
	switch {
	case status >= 200 && status < 300:
		return Success
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusNotFound:
		return Denied
	}
	return Failed
}

// Event is one audited request.
type Event struct {
	ID           int64     // position in the chain (1, 2, ...), set by the store
	At           time.Time // when the answer was decided
	RequestID    string    // the response's X-Request-Id
	Actor        string    // the token's sub; "" when authentication failed
	Action       Action
	ResourceType string // blob, patient, appointment
	ResourceID   string // Carebridge's own id of the resource, when there is one
	BusinessID   string // the business acted for (the acting business, a blob's or business's own); "" when none
	Outcome      Outcome
	Status       int            // the HTTP status sent; 0 for a Started event
	Detail       map[string]any // small, never patient data; nil reads as {}
	Hash         []byte         // SHA-256 chain link, set by the store
}
