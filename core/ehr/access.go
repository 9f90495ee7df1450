package ehr

import "github.com/carebridge/carebridge/core"

// The access rules for patient data (the contract's "Access to patient
// data"). Patient data needs more than a valid token: the token's SMART
// scopes. Agents need only a valid token.

// FHIR resource types the rules speak of.
const (
	resourcePatient     = "Patient"
	resourceAppointment = "Appointment"
)

// checkSearch allows a patient search to staff and systems: s on Patient
// in context user or system.
func checkSearch(a core.Actor) error {
	if a.Allows(core.ContextUser, resourcePatient, core.PermSearch) || a.Allows(core.ContextSystem, resourcePatient, core.PermSearch) {
		return nil
	}
	return core.InsufficientScope("user/Patient.rs")
}

// checkSearchOf allows a search of people (t "") or of t's records.
func checkSearchOf(a core.Actor, t ClinicalType) error {
	if t == "" {
		return checkSearch(a)
	}
	return checkRecordSearch(a, t)
}

// reach is which appointments a caller may act on.
type reach uint8

const (
	reachAll reach = iota + 1 // staff or a system: every appointment of the EHR
	reachOwn                  // a patient: only those booked with their sub
)

// appointmentReach tells which appointments a may act on with perm (c to
// create, s to list, u to cancel or reschedule): every one with the
// permission in context user or system, its own with it in context patient.
// Without either it is insufficient_scope, naming the staff scope.
func appointmentReach(a core.Actor, perm byte) (reach, error) {
	switch {
	case a.Allows(core.ContextUser, resourceAppointment, perm), a.Allows(core.ContextSystem, resourceAppointment, perm):
		return reachAll, nil
	case a.Allows(core.ContextPatient, resourceAppointment, perm):
		return reachOwn, nil
	}
	return 0, core.InsufficientScope("user/Appointment." + string(perm))
}
