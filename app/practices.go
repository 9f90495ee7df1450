package app

import (
	"context"
	"sync"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The memberships remembered for the acting business.
const (
	// membershipTTL is how long a subject's memberships are remembered:
	// a membership added or removed is seen by every instance within it.
	membershipTTL = time.Second
	// membershipEntries bounds the subjects remembered; past it the memory
	// starts afresh.
	membershipEntries = 10000
)

// memberships remembers each subject's businesses for membershipTTL, so
// that a busy caller's requests do not each ask PostgreSQL which
// businesses it may act for (a quarter of a cached search's throughput).
// Whether a business exists is asked every time.
type memberships struct {
	ehr.Practices
	ttl time.Duration
	now func() time.Time

	mu        sync.Mutex
	bySubject map[string]membership
}

type membership struct {
	ids   []string
	until time.Time
}

func newMemberships(p ehr.Practices) *memberships {
	return &memberships{Practices: p, ttl: membershipTTL, now: time.Now, bySubject: map[string]membership{}}
}

// BusinessesOf returns subject's businesses, from memory when they were
// read less than ttl ago.
func (m *memberships) BusinessesOf(ctx context.Context, subject string) ([]string, error) {
	now := m.now()
	m.mu.Lock()
	got, ok := m.bySubject[subject]
	m.mu.Unlock()
	if ok && now.Before(got.until) {
		return got.ids, nil
	}
	ids, err := m.Practices.BusinessesOf(ctx, subject)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	if len(m.bySubject) >= membershipEntries {
		clear(m.bySubject)
	}
	m.bySubject[subject] = membership{ids: ids, until: now.Add(m.ttl)}
	m.mu.Unlock()
	return ids, nil
}
