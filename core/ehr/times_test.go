package ehr

import (
	"context"
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core"
)

// A time that did not parse at the edge is a field problem of the core: the
// caller is checked first, and the problem is reported with the request's
// others, in one message.
func TestSchedulingTimes_CallerFirstThenAllFieldProblems(t *testing.T) {
	s := scheduling(newCalendar(chicago))
	none := core.WithActor(context.Background(), core.Actor{Subject: "u"})
	bad := request("tomorrow at nine", "2030-03-04T09:30:00-06:00")
	bad.Patient.Email = "not an e-mail"
	if _, err := s.Book(none, bad); !errors.Is(err, core.ErrInsufficientScope) {
		t.Fatalf("book without the scope: %v", err)
	}
	if _, err := s.Reschedule(none, RescheduleRequest{ID: "appt-1", Start: at("2030-03-04T10:00:00-06:00"), End: at("soon")}); !errors.Is(err, core.ErrInsufficientScope) {
		t.Fatalf("reschedule without the scope: %v", err)
	}
	if _, err := s.Availability(context.Background(), AvailabilityRequest{AgentID: "dr-1", From: day("2030-02-30"), To: Date{}, Minutes: 30}); !errors.Is(err, core.ErrUnauthenticated) {
		t.Fatalf("availability without a caller: %v", err)
	}

	for _, tt := range []struct {
		name string
		call func() error
		want string
	}{
		{"book", func() error { _, err := s.Book(caller("u"), bad); return err },
			"Validation failed: start must be an RFC 3339 time with an offset, such as 2030-01-02T09:00:00-06:00; patient.email must be a valid e-mail address"},
		{"book, end", func() error {
			r := request("2030-03-04T09:00:00-06:00", "half past")
			r.LocationID = string(make([]byte, 101))
			_, err := s.Book(caller("u"), r)
			return err
		}, "Validation failed: end must be an RFC 3339 time with an offset; locationId must be at most 100 characters"},
		{"book, end and duration", func() error {
			r := request("2030-03-04T09:00:00-06:00", "half past")
			r.DurationMinutes = 30
			_, err := s.Book(caller("u"), r)
			return err
		}, "Validation failed: end and durationMinutes are exclusive; send one"},
		{"reschedule", func() error {
			_, err := s.Reschedule(caller("u"), RescheduleRequest{ID: "appt-1", Start: Instant{}, End: at("2030-03-04T10:30:00-06:00")})
			return err
		},
			"Validation failed: start must be an RFC 3339 time with an offset, such as 2030-01-02T09:00:00-06:00"},
		{"availability", func() error {
			_, err := s.Availability(caller("u"), AvailabilityRequest{AgentID: "dr-1", From: day("2030-02-30"), To: Date{}, Minutes: 3})
			return err
		},
			"Validation failed: from must be a date YYYY-MM-DD; to must be a date YYYY-MM-DD; duration must be between 5 and 480 minutes"},
	} {
		var ce *core.Error
		if err := tt.call(); !errors.As(err, &ce) || !errors.Is(err, ErrInvalidAppointment) || ce.Message != tt.want {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// The fingerprint hashes a time as the client sent it; an Instant built
// without its text (in a test, or another caller) hashes the time itself,
// so two times never share a fingerprint.
func TestInstant_Text(t *testing.T) {
	for _, tt := range []struct {
		in   Instant
		want string
	}{
		{Instant{}, ""},
		{at("2030-03-04T09:00:00.000-06:00"), "2030-03-04T09:00:00.000-06:00"},
		{at("nine"), "nine"},
		{Instant{Time: at("2030-03-04T09:00:00.5-06:00").Time}, "2030-03-04T09:00:00.5-06:00"},
	} {
		if got := tt.in.text(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.in, got, tt.want)
		}
	}
}
