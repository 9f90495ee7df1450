package fhir

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core"
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
// of the patient search (Client).
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

// do sends one request (with body as application/fhir+json when not nil,
// replayable by the Doer's retries) and returns the answer as exchange
// does: on a non-2xx status a *core.Error with resp to look at.
func (s *Scheduler) do(ctx context.Context, method, target string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, nil, s.c.upstream("ehr_error", "has an invalid URL", err)
	}
	req.Header.Set("Accept", contentType)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, out, err := s.c.exchange(ctx, req)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return nil, nil, s.bad(de.msg, de.err)
		}
		return resp, nil, err
	}
	return resp, out, nil
}

func gone(resp *http.Response) bool {
	return resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone)
}

func (s *Scheduler) bad(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: s.c.http.Name() + " sent an invalid answer: " + what, Err: cause}
}

func (s *Scheduler) badDecode(err error) *core.Error {
	var de *decodeError
	if errors.As(err, &de) {
		return s.bad(de.msg, de.err)
	}
	return s.bad("it could not be decoded", err)
}
