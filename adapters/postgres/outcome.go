package postgres

import (
	"cmp"
	"encoding/json"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// outcomeRecord is an Idempotency-Key's outcome as the outcome column
// (jsonb) keeps it: what the replay needs, ids, statuses and codes. Rows
// written before the format moved here hold the same keys, so they stay
// readable: change it only with a migration.
type outcomeRecord struct {
	// System is the EHR system that holds the appointment; absent in rows
	// written before outcomes recorded it (migration 0017).
	System        string         `json:"system,omitempty"`
	AppointmentID string         `json:"appointmentId,omitempty"`
	Status        string         `json:"status,omitempty"`
	Error         *outcomeFailed `json:"error,omitempty"`
}

// outcomeFailed is a failure kept for its replay: its kind (the status),
// its code, and the service's own message (ehr.OutcomeError), at most
// maxOutcomeMessage bytes; absent in rows of before migration 0017, which
// removed them (they may have quoted an EHR).
type outcomeFailed struct {
	Kind    core.Kind `json:"kind"`
	Code    string    `json:"code"`
	Message string    `json:"message,omitempty"`
}

// maxOutcomeMessage bounds the message an outcome keeps.
const maxOutcomeMessage = 300

// replayedMessage is the message of a replayed failure kept without one.
const replayedMessage = "The first request with this Idempotency-Key failed"

// encodeOutcome is o in the outcome column's format.
func encodeOutcome(o ehr.Outcome) ([]byte, error) {
	r := outcomeRecord{System: o.System, AppointmentID: o.AppointmentID, Status: o.Status}
	if o.Error != nil {
		r.Error = &outcomeFailed{Kind: o.Error.Kind, Code: o.Error.Code, Message: ehr.ClipText(o.Error.Message, maxOutcomeMessage)}
	}
	return json.Marshal(r)
}

// decodeOutcome reads an outcome written by encodeOutcome.
func decodeOutcome(raw []byte) (ehr.Outcome, error) {
	var r outcomeRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ehr.Outcome{}, err
	}
	o := ehr.Outcome{System: r.System, AppointmentID: r.AppointmentID, Status: r.Status}
	if r.Error != nil {
		o.Error = &ehr.OutcomeError{Kind: r.Error.Kind, Code: r.Error.Code, Message: cmp.Or(r.Error.Message, replayedMessage)}
	}
	return o, nil
}
