package fhir

import (
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// Bounds of the scheduler.
const (
	// MaxSlotLength is how far before the start of a FreePeriods range
	// the scheduler looks for free Slots and booked Appointments that
	// began earlier and still run into it (Slot and Appointment can only be
	// searched by their start). A longer slot or appointment that began
	// before the range is not seen.
	MaxSlotLength = 24 * time.Hour
	// refChunk is how many references go into one comma-separated search
	// value (a PractitionerRole or Slot search for many practitioners or
	// schedules is split into several).
	refChunk = 40
)

// Scheduler is the FHIR R4 adapter of the appointment and agent endpoints
// (ehr.Scheduler). It shares the Doer — and so authentication, retries,
// rate limit and circuit breaker — and the error mapping and body bounds
// of the patient search (Client), and its paged search (searchAll, …).
//
// Agents are Practitioners, with their PractitionerRoles for specialty and
// locations. Free time is the Slots (status free) of the practitioner's
// Schedules, merged, less the Appointments that hold the practitioner.
// Appointments are Appointment resources whose patient is contained in
// them. Listings ask the server for the page wanted and take totalCount
// from Bundle.total; when the server cannot answer a listing that way
// (a filter it cannot apply or ignores, no total), they read every match,
// at most MaxScan, and filter and page in the adapter. A listing is exact
// or an upstream error, never cut short.
type Scheduler struct {
	c   *Client
	log *slog.Logger
	now func() time.Time
	// noRevinclude is set once the server refused _revinclude: roles then
	// come from a second search.
	noRevinclude atomic.Bool
}

var _ ehr.Scheduler = (*Scheduler)(nil)

// SchedulerOption adjusts a Scheduler.
type SchedulerOption func(*Scheduler)

// WithLogger sets the logger of the scheduler's warnings (unknown statuses
// and time zones, cut listings); nil discards them. Nothing about a
// patient is logged.
func WithLogger(l *slog.Logger) SchedulerOption {
	return func(s *Scheduler) { s.log = l }
}

// NewScheduler returns a Scheduler that sends its requests through doer.
func NewScheduler(doer Doer, opts ...SchedulerOption) *Scheduler {
	s := &Scheduler{c: New(doer, ""), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

func gone(resp *http.Response) bool {
	return resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone)
}
