package ehr

import (
	"context"
	"time"
)

// AppointmentStatus is the internal status of an appointment.
type AppointmentStatus string

// The internal statuses.
const (
	StatusPending   AppointmentStatus = "pending"
	StatusBooked    AppointmentStatus = "booked"
	StatusCheckedIn AppointmentStatus = "checked_in"
	StatusFulfilled AppointmentStatus = "fulfilled"
	StatusCancelled AppointmentStatus = "cancelled"
	StatusNoShow    AppointmentStatus = "no_show"
)

// AppointmentStatuses lists every internal status.
var AppointmentStatuses = []AppointmentStatus{StatusPending, StatusBooked, StatusCheckedIn, StatusFulfilled, StatusCancelled, StatusNoShow}

// Appointment is an appointment as the service knows it, whichever EHR
// holds it. Times carry their offset.
type Appointment struct {
	ID         string // the service's id; adapters carry the EHR's id in it
	AgentID    string
	Start, End time.Time
	Status     AppointmentStatus
	Reason     string
	LocationID string
	Patient    PatientContact
	Source     string // name of the EHR system
	ExternalID string // the EHR's own id of the appointment
	// Ref is the service's reference of the booking that made it, which
	// the adapter puts on the appointment it creates (FHIR: an identifier;
	// bot: externalId); "" when unknown.
	Ref       string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PatientContact is who an appointment is for.
type PatientContact struct {
	FirstName   string
	LastName    string
	DateOfBirth string // YYYY-MM-DD
	Email       string
	Phone       string
}

// Agent is a clinician (or other bookable person) of the EHR.
type Agent struct {
	ID          string
	FirstName   string
	LastName    string
	Name        string
	Specialty   string
	Email       string
	Timezone    string // IANA zone of the agent's calendar
	LocationIDs []string
}

// Period is a span of time [Start, End).
type Period struct {
	Start, End time.Time
}

// AgentFilter narrows an agent listing of the acting business; empty
// fields do not filter.
type AgentFilter struct {
	Business                    string // the acting business (Tenancy.Act; "" none)
	Name, Specialty, LocationID string
	Page, Limit                 int
}

// AppointmentFilter narrows an appointment listing of the acting business;
// empty fields do not filter.
type AppointmentFilter struct {
	Business     string // the acting business (Tenancy.Act; "" none)
	AgentID      string
	Status       AppointmentStatus
	From, To     time.Time // appointments starting in [From, To)
	PatientEmail string
	Page, Limit  int
}

// Page is one page of a listing.
type Page[T any] struct {
	Items      []T
	TotalCount int
	Page       int
	Limit      int
}

// Scheduler is the EHR behind the appointment and agent endpoints (a
// driven port; the FHIR and WebSocket-bot adapters implement it, and the
// EHR systems file's integration.ehr chooses one). Missing records are
// ErrAgentNotFound or ErrAppointmentNotFound; a time the EHR refuses as
// taken is ErrAgentUnavailable; upstream failures are *core.Error of
// KindBadGateway, KindUnavailable or KindTimeout.
type Scheduler interface {
	ListAgents(ctx context.Context, f AgentFilter) (Page[Agent], error)
	GetAgent(ctx context.Context, id string) (Agent, error)
	// FreePeriods returns the spans in [from, to) in which the agent is
	// free: their schedule's free time less booked appointments.
	FreePeriods(ctx context.Context, agentID string, from, to time.Time) ([]Period, error)

	ListAppointments(ctx context.Context, f AppointmentFilter) (Page[Appointment], error)
	GetAppointment(ctx context.Context, id string) (Appointment, error)
	// GetAppointments returns those of ids the EHR holds, in any order (an
	// id it does not hold is left out, as an invalid one is), reading
	// them in one search a batch where the EHR can search by id, else one
	// by one. It returns only appointments it was asked for.
	GetAppointments(ctx context.Context, ids []string) ([]Appointment, error)
	// CreateAppointment books a (status booked) under its Ref and returns
	// it with its ids.
	CreateAppointment(ctx context.Context, a Appointment) (Appointment, error)
	// FindAppointment returns the appointment created under ref.Ref;
	// found is false when the EHR has none. ref.AgentID, Start and End are
	// those of the booking, where an adapter may look.
	FindAppointment(ctx context.Context, ref Appointment) (a Appointment, found bool, err error)
	CancelAppointment(ctx context.Context, id, reason string) (Appointment, error)
	RescheduleAppointment(ctx context.Context, id string, start, end time.Time) (Appointment, error)
}
