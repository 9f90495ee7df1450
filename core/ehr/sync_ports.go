package ehr

import (
	"context"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The ports of EHR sync (issue 21): hearing the appointment changes made
// in the EHR itself, not through the API.

// AppointmentChange is an appointment as the EHR holds it after a change.
// Appointment.UpdatedAt is the EHR's own time of the change (FHIR
// meta.lastUpdated, a bot's updatedAt), never the local clock; its Ref is
// set when Carebridge booked it (FHIR: our identifier; bot: externalId).
type AppointmentChange struct {
	Appointment Appointment
	// Version tells this state of the appointment from another: the
	// server's meta.versionId, else its last-updated instant (RFC 3339
	// with nanoseconds).
	Version string
}

// ChangeFeed is an integration EHR's feed of appointment changes (a driven
// port; the FHIR scheduler and the WebSocket bot implement it).
type ChangeFeed interface {
	// AppointmentChanges returns the appointments the EHR changed after
	// since (its own clock; the zero time: from its first), oldest first
	// by UpdatedAt, at most max; more reports that there are more (the
	// caller asks again from the last one's UpdatedAt). An appointment
	// the EHR returns without a usable time, agent or status is left out
	// (and logged without patient data), so it never blocks the feed. An
	// EHR that cannot tell its changes fails with ErrChangesNotSupported.
	AppointmentChanges(ctx context.Context, since time.Time, max int) (changes []AppointmentChange, more bool, err error)
}

// ErrChangesNotSupported is an EHR that cannot tell its appointment
// changes (a bot answering unknown_action to appointments.changes): its
// poller logs it once and stops.
var ErrChangesNotSupported = &core.Error{Kind: core.KindBadGateway, Code: "changes_not_supported", Message: "The EHR cannot tell its appointment changes"}
