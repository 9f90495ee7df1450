package ehr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestAvailability_FollowsTheAgentsTimezoneAcrossDST(t *testing.T) {
	c := newCalendar(newYork)
	// A calendar free all day, every day, to count the hours of a day.
	c.FreePeriodsFunc = func(_ context.Context, _ string, from, to time.Time) ([]Period, error) {
		return []Period{{from.Add(-time.Hour), to.Add(time.Hour)}}, nil
	}
	s := scheduling(c)
	for _, tt := range []struct {
		day   string
		slots int
	}{
		{"2030-03-10", 46}, // spring forward: a 23-hour day
		{"2030-11-03", 50}, // fall back: a 25-hour day
		{"2030-06-01", 48},
	} {
		a, err := s.Availability(caller("u"), AvailabilityRequest{AgentID: "dr-ny", From: day(tt.day), To: day(tt.day), Minutes: 30})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Slots) != tt.slots || a.Timezone != "America/New_York" {
			t.Fatalf("%s: %d slots in %s, want %d", tt.day, len(a.Slots), a.Timezone, tt.slots)
		}
		first := a.Slots[0].Start
		if first.Location().String() != "America/New_York" || first.Hour() != 0 || first.Format("2006-01-02") != tt.day {
			t.Fatalf("%s: first slot %v", tt.day, first)
		}
	}
	spring, _ := s.Availability(caller("u"), AvailabilityRequest{AgentID: "dr-ny", From: day("2030-03-10"), To: day("2030-03-10"), Minutes: 60})
	if got := spring.Slots[2].Start.Format(time.RFC3339); got != "2030-03-10T03:00:00-04:00" {
		t.Fatalf("third hour of the spring-forward day starts %s", got)
	}

	for _, bad := range [][3]string{{"2030-03-10", "2030-04-11", "30"}, {"2030-03-10", "2030-03-09", "30"}, {"10/03/2030", "2030-03-10", "30"}, {"2030-03-10", "2030-03-10", "2"}} {
		var minutes int
		fmt.Sscan(bad[2], &minutes)
		if _, err := s.Availability(caller("u"), AvailabilityRequest{AgentID: "dr-ny", From: day(bad[0]), To: day(bad[1]), Minutes: minutes}); !errors.Is(err, ErrInvalidAppointment) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := s.Availability(caller("u"), AvailabilityRequest{AgentID: "dr-x", From: day("2030-03-10"), To: day("2030-03-10"), Minutes: 30}); !errors.Is(err, ErrAgentNotFound) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestSlots_CutsMergedFreeTime(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2030, 1, 1, h, m, 0, 0, time.UTC) }
	free := []Period{{at(9, 0), at(10, 0)}, {at(10, 0), at(10, 45)}, {at(13, 10), at(13, 50)}, {at(7, 0), at(8, 0)}}
	slots := Slots(free, at(8, 0), at(14, 0), 30*time.Minute, time.UTC)
	var got []string
	for _, s := range slots {
		got = append(got, s.Start.Format("15:04"))
	}
	if strings.Join(got, " ") != "09:00 09:30 10:00 13:10" {
		t.Fatalf("slots %v", got)
	}
}

func TestIntegration_WithoutAnEHR(t *testing.T) {
	s := schedulingWith(nil, SchedulingConfig{FingerprintKeys: testFingerprintKeys})
	if _, err := s.Agents(caller("u"), AgentFilter{}); !errors.Is(err, ErrNoSchedulingEHR) {
		t.Fatalf("got %v", err)
	}
	if _, err := s.Book(caller("u"), BookingRequest{}); !errors.Is(err, ErrNoSchedulingEHR) {
		t.Fatalf("got %v", err)
	}
}
