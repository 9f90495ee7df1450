package ehr

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

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

// A period is cut to the window [from, to): what lies outside or only
// touches a bound is dropped, what straddles a bound is cut at it.
func TestPeriod_Clip(t *testing.T) {
	nine := time.Date(2030, 3, 4, 9, 0, 0, 0, time.UTC)
	p := func(m1, m2 int) Period {
		return Period{Start: nine.Add(time.Duration(m1) * time.Minute), End: nine.Add(time.Duration(m2) * time.Minute)}
	}
	from, to := nine, nine.Add(60*time.Minute) // the window is p(0, 60)
	for _, tt := range []struct {
		name string
		in   Period
		want Period
		ok   bool
	}{
		{"inside", p(10, 20), p(10, 20), true},
		{"the window itself", p(0, 60), p(0, 60), true},
		{"wholly before", p(-30, -10), Period{}, false},
		{"wholly after", p(70, 90), Period{}, false},
		{"ends at from", p(-30, 0), Period{}, false},
		{"starts at to", p(60, 90), Period{}, false},
		{"straddles from", p(-30, 15), p(0, 15), true},
		{"straddles to", p(45, 90), p(45, 60), true},
		{"covers the window", p(-30, 90), p(0, 60), true},
		{"empty, inside", p(20, 20), Period{}, false},
		{"empty, at from", p(0, 0), Period{}, false},
		{"reversed", p(30, 20), Period{}, false},
		{"zero", Period{}, Period{}, false},
	} {
		got, ok := tt.in.Clip(from, to)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("%s: %v.Clip = %v, %v; want %v, %v", tt.name, tt.in, got, ok, tt.want, tt.ok)
		}
	}
	in := []Period{p(-30, -10), p(-30, 15), p(20, 20), p(30, 40), p(45, 90), p(60, 90)}
	if got, want := ClipPeriods(in, from, to), []Period{p(0, 15), p(30, 40), p(45, 60)}; !reflect.DeepEqual(got, want) {
		t.Errorf("ClipPeriods = %v, want %v", got, want)
	}
	if got := ClipPeriods(nil, from, to); got == nil || len(got) != 0 {
		t.Errorf("ClipPeriods(nil) = %#v, want an empty slice", got)
	}
}
