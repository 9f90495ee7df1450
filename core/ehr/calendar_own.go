package ehr

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/carebridge/carebridge/core"
)

// maxOwnAppointments bounds the appointments a patient-context listing
// reads from the EHR; a caller with more is answered with an error rather
// than a silently short list.
const maxOwnAppointments = 500

// ownReadBatch is how many appointments a patient-context listing asks an
// EHR for in one call (Scheduler.GetAppointments: one search where the EHR
// can search by id).
const ownReadBatch = 100

// ErrTooManyToList is a patient-context listing over maxOwnAppointments.
// Its code is its own: too_many_appointments is the contract's 409 of a
// booking past MaxFutureAppointments (ErrAppointmentLimit).
var ErrTooManyToList = &core.Error{Kind: core.KindUnavailable, Code: "listing_too_large",
	Message: "Too many appointments were booked with this token to list them; use a staff token"}

// ownAppointments lists the appointments c's subject booked acting for its
// business, each read from the EHR system its booking recorded, filtered,
// ordered by start, and paged. One the EHR no longer has is left out; a
// system no longer configured fails the listing (ErrEHRSystemGone).
//
// What it costs the EHRs is bounded: the bookings known cancelled (through
// the service) are read only when the listing asks for cancelled ones, so
// booking and cancelling over and over costs no later listing anything;
// the rest are read in batches of ownReadBatch, at most maxOwnAppointments;
// and each batch after the first counts as one more appointment call
// against the caller's rate limit, so a caller's listings spend an EHR's
// shared rate limit no faster than its own calls may.
func (s *Scheduling) ownAppointments(ctx context.Context, c requester, flt AppointmentFilter) (Page[Appointment], error) {
	booked, err := s.bookings.BookedBy(ctx, c.Subject, c.business)
	if err != nil {
		return Page[Appointment]{}, fmt.Errorf("read bookings: %w", err)
	}
	bySystem, n := toRead(booked, flt.Status == StatusCancelled)
	if n > maxOwnAppointments {
		return Page[Appointment]{}, ErrTooManyToList
	}
	systems := slices.Sorted(maps.Keys(bySystem))
	schs := make([]Scheduler, len(systems))
	for i, system := range systems { // all of them first: fail closed before asking any
		if schs[i], err = s.ehrOf(system, c.business); err != nil {
			return Page[Appointment]{}, err
		}
	}
	var all []Appointment
	calls := 0
	for i, system := range systems {
		for batch := range slices.Chunk(bySystem[system], ownReadBatch) {
			if calls++; calls > 1 {
				if err := s.limit(ctx, c.Subject, c.business, c.reach); err != nil {
					return Page[Appointment]{}, err
				}
			}
			found, err := schs[i].GetAppointments(ctx, batch)
			if err != nil {
				return Page[Appointment]{}, err
			}
			all = append(all, asked(found, batch, flt)...)
		}
	}
	slices.SortFunc(all, func(a, b Appointment) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.ID, b.ID)) })
	from := min((flt.Page-1)*flt.Limit, len(all))
	return Page[Appointment]{Items: all[from:min(from+flt.Limit, len(all))], TotalCount: len(all), Page: flt.Page, Limit: flt.Limit}, nil
}

// toRead returns the appointment ids of booked to read, by EHR system, and
// how many they are: those known cancelled only when cancelled is set.
func toRead(booked []OwnBooking, cancelled bool) (map[string][]string, int) {
	out := map[string][]string{}
	seen := map[OwnBooking]bool{}
	n := 0
	for _, b := range booked {
		key := OwnBooking{System: b.System, AppointmentID: b.AppointmentID}
		if b.Cancelled && !cancelled || seen[key] {
			continue
		}
		seen[key] = true
		out[b.System] = append(out[b.System], b.AppointmentID)
		n++
	}
	return out, n
}

// asked returns those of found that were asked for (ids), once each, and
// that pass flt: an EHR that answers with others (a server ignoring the
// search by id) shows nothing of them.
func asked(found []Appointment, ids []string, flt AppointmentFilter) []Appointment {
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	var out []Appointment
	for _, a := range found {
		if want[a.ID] && flt.matches(a) {
			want[a.ID] = false
			out = append(out, a)
		}
	}
	return out
}

// matches applies the listing's filters to one appointment, as the EHR
// adapters do.
func (f AppointmentFilter) matches(a Appointment) bool {
	switch {
	case f.AgentID != "" && a.AgentID != f.AgentID,
		f.Status != "" && a.Status != f.Status,
		!f.From.IsZero() && a.Start.Before(f.From),
		!f.To.IsZero() && !a.Start.Before(f.To),
		f.PatientEmail != "" && !strings.EqualFold(strings.TrimSpace(f.PatientEmail), a.Patient.Email):
		return false
	}
	return true
}
