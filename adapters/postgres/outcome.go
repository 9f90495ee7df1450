package postgres

import (
	"encoding/json"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// outcomeRecord is an Idempotency-Key's outcome as the outcome column
// (jsonb) keeps it. Rows written before the format moved here hold the
// same keys, so they stay readable: change it only with a migration.
type outcomeRecord struct {
	AppointmentID string         `json:"appointmentId,omitempty"`
	Status        string         `json:"status,omitempty"`
	Error         *outcomeFailed `json:"error,omitempty"`
}

type outcomeFailed struct {
	Kind    core.Kind `json:"kind"`
	Code    string    `json:"code"`
	Message string    `json:"message"`
}

// encodeOutcome is o in the outcome column's format.
func encodeOutcome(o ehr.Outcome) ([]byte, error) {
	r := outcomeRecord{AppointmentID: o.AppointmentID, Status: o.Status}
	if o.Error != nil {
		r.Error = &outcomeFailed{Kind: o.Error.Kind, Code: o.Error.Code, Message: o.Error.Message}
	}
	return json.Marshal(r)
}

// decodeOutcome reads an outcome written by encodeOutcome.
func decodeOutcome(raw []byte) (ehr.Outcome, error) {
	var r outcomeRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ehr.Outcome{}, err
	}
	o := ehr.Outcome{AppointmentID: r.AppointmentID, Status: r.Status}
	if r.Error != nil {
		o.Error = &ehr.OutcomeError{Kind: r.Error.Kind, Code: r.Error.Code, Message: r.Error.Message}
	}
	return o, nil
}
