package ehr

import "github.com/carebridge/carebridge/core"

// The failures of scheduling (appointments and agents), declared once.
var (
	ErrAgentNotFound       = &core.Error{Kind: core.KindNotFound, Code: "agent_not_found", Message: "Agent not found"}
	ErrAppointmentNotFound = &core.Error{Kind: core.KindNotFound, Code: "appointment_not_found", Message: "Appointment not found"}
	ErrAgentUnavailable    = &core.Error{Kind: core.KindConflict, Code: "agent_unavailable", Message: "The agent is not free at that time"}
	ErrAlreadyCancelled    = &core.Error{Kind: core.KindConflict, Code: "appointment_cancelled", Message: "The appointment is cancelled"}
	ErrInvalidAppointment  = &core.Error{Kind: core.KindInvalid, Code: "validation_failed", Message: "Validation failed"}
	ErrNoSchedulingEHR     = &core.Error{Kind: core.KindUnavailable, Code: "no_ehr_configured", Message: "No EHR system is configured for appointments and agents"}
	// ErrEHRSystemGone is a booking, hold or Idempotency-Key outcome of an
	// EHR system no longer in the EHR systems file: no other EHR is asked
	// for what it holds (another's appointment may have the same id).
	ErrEHRSystemGone = &core.Error{Kind: core.KindUnavailable, Code: "ehr_system_not_configured",
		Message: "The EHR system that holds this appointment is no longer configured"}
)
