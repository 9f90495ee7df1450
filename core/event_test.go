package core

import (
	"regexp"
	"testing"
	"time"
)

func TestNewEvent_FreshIDAndNow(t *testing.T) {
	id := regexp.MustCompile(`^evt_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	before := time.Now().Add(-time.Millisecond)
	for range 1000 {
		e := NewEvent(LocationUpdated, "b", LocationData{LocationID: 1})
		if !id.MatchString(e.ID) {
			t.Fatalf("id %q", e.ID)
		}
		if seen[e.ID] {
			t.Fatalf("id %q twice", e.ID)
		}
		seen[e.ID] = true
		if e.OccurredAt.Location() != time.UTC || e.OccurredAt.Before(before) || e.OccurredAt.After(time.Now()) ||
			e.OccurredAt.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("OccurredAt %v", e.OccurredAt)
		}
		if e.Type != LocationUpdated || e.BusinessID != "b" || e.Data != (LocationData{LocationID: 1}) {
			t.Fatalf("NewEvent() = %+v", e)
		}
	}
}
