package postgres

import (
	"reflect"
	"testing"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// The outcome column's format is pinned: what the store wrote before the
// format moved out of core/ehr (and jsonb's normalised form of it, as it
// reads back) still decodes to the same outcome.
func TestOutcome_GoldenFormat(t *testing.T) {
	for _, tt := range []struct {
		name       string
		outcome    ehr.Outcome
		stored, pg string
	}{
		{"booked", ehr.Outcome{AppointmentID: "a-1", Status: "booked"},
			`{"appointmentId":"a-1","status":"booked"}`,
			`{"status": "booked", "appointmentId": "a-1"}`},
		{"failed", ehr.Outcome{Error: &ehr.OutcomeError{Kind: core.KindConflict, Code: "agent_unavailable", Message: "The agent is not free <then>"}},
			`{"error":{"kind":5,"code":"agent_unavailable","message":"The agent is not free \u003cthen\u003e"}}`,
			`{"error": {"code": "agent_unavailable", "kind": 5, "message": "The agent is not free <then>"}}`},
		{"invalid", ehr.Outcome{Error: &ehr.OutcomeError{Kind: core.KindInvalid, Code: "validation_failed", Message: "Validation failed: start must be in the future"}},
			`{"error":{"kind":1,"code":"validation_failed","message":"Validation failed: start must be in the future"}}`,
			`{"error": {"code": "validation_failed", "kind": 1, "message": "Validation failed: start must be in the future"}}`},
		{"booked in a system", ehr.Outcome{System: "clinic-a", AppointmentID: "a-1", Status: "booked"},
			`{"system":"clinic-a","appointmentId":"a-1","status":"booked"}`,
			`{"status": "booked", "system": "clinic-a", "appointmentId": "a-1"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := encodeOutcome(tt.outcome)
			if err != nil || string(raw) != tt.stored {
				t.Fatalf("encode: %s (%v)\nwant %s", raw, err, tt.stored)
			}
			for _, s := range []string{tt.stored, tt.pg} {
				got, err := decodeOutcome([]byte(s))
				if err != nil || !reflect.DeepEqual(got, tt.outcome) {
					t.Fatalf("decode %s: %+v (%v), want %+v", s, got, err, tt.outcome)
				}
			}
		})
	}
}

// A failure kept before migration 0017 lost its message (it may have
// quoted an EHR): its replay answers the service's own words, with its
// kind and code.
func TestOutcome_AFailureWithoutItsMessageReplaysTheServicesOwn(t *testing.T) {
	got, err := decodeOutcome([]byte(`{"error": {"code": "validation_failed", "kind": 1}}`))
	want := ehr.Outcome{Error: &ehr.OutcomeError{Kind: core.KindInvalid, Code: "validation_failed", Message: replayedMessage}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decode: %+v (%v), want %+v", got, err, want)
	}
}
