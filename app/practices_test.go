package app

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// practices answers from a map and counts the questions.
type practices struct {
	of    map[string][]string
	asked int
	err   error
}

func (p *practices) BusinessesOf(_ context.Context, subject string) ([]string, error) {
	p.asked++
	return p.of[subject], p.err
}

func (p *practices) BusinessExists(context.Context, string) (bool, error) { return true, nil }

func TestMemberships_RememberedForTheirTTLOnly(t *testing.T) {
	p := &practices{of: map[string][]string{"ana": {"b-1"}}}
	m := newMemberships(p)
	now := time.Date(2030, 1, 1, 9, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if ids, err := m.BusinessesOf(ctx, "ana"); err != nil || !slices.Equal(ids, []string{"b-1"}) {
			t.Fatalf("%v %v", ids, err)
		}
	}
	if p.asked != 1 {
		t.Fatalf("asked %d times within the TTL, want 1", p.asked)
	}
	// A membership removed is seen once the TTL is over.
	p.of["ana"] = nil
	now = now.Add(membershipTTL)
	if ids, _ := m.BusinessesOf(ctx, "ana"); len(ids) != 0 || p.asked != 2 {
		t.Fatalf("after the TTL: %v, asked %d", ids, p.asked)
	}
	// Another subject is asked for itself; a failure is not remembered.
	p.err = errors.New("down")
	if _, err := m.BusinessesOf(ctx, "ben"); err == nil {
		t.Fatal("a failure was not passed on")
	}
	p.err = nil
	p.of["ben"] = []string{"b-2"}
	if ids, _ := m.BusinessesOf(ctx, "ben"); !slices.Equal(ids, []string{"b-2"}) {
		t.Fatalf("ben: %v", ids)
	}
}
