package ehr

import (
	"context"
	"time"
)

//go:generate go tool moq -rm -out ports_moq_test.go . PatientSearcher RecordSearcher Cache Scheduler

// PatientQuery is a normalised patient search, as each EHR adapter receives
// it. Empty fields are not searched on.
type PatientQuery struct {
	Text       string // free text: a name search
	Family     string
	Given      string
	BirthDate  string // YYYY-MM-DD
	Gender     string // male, female, other, unknown
	Identifier string // a medical record number (MRN), optionally system|value
	Phone      string
	// UpdatedFrom and UpdatedTo bound the record's last update (inclusive
	// dates, from filters.dateRange); zero when absent.
	UpdatedFrom, UpdatedTo time.Time
	// Max is the most records the adapter returns; it follows the EHR's
	// paging until it has that many or there are no more.
	Max int
}

// PatientSearcher is one EHR system's patient search (a driven port; the
// FHIR and WebSocket-bot adapters implement it). Failures are *core.Error
// of KindTimeout (code "ehr_timeout"), KindRateLimited ("rate_limited"),
// KindUnavailable ("circuit_open") or KindBadGateway (any other upstream
// failure), with a message that names no secret.
type PatientSearcher interface {
	SearchPatients(ctx context.Context, q PatientQuery) ([]Patient, error)
}

// RecordSearcher is one EHR system's clinical record search (a driven
// port; the FHIR and WebSocket-bot adapters implement it): every record of
// q.Type of the person q.PatientID, its paging followed to the end. An
// adapter bounds what it reads: past its bound it fails with
// ehr_listing_inexact, never with a cut list. q.From and q.To may be sent
// to the EHR only where its parameter covers the record's clinical date;
// the core applies them again to what comes back (InDateRange). A system
// that cannot search the type fails with KindBadGateway and code
// record_type_not_supported; other failures are as for PatientSearcher.
// The result is never nil when err is nil.
type RecordSearcher interface {
	SearchRecords(ctx context.Context, q RecordQuery) ([]Record, error)
}

// Cache keeps search answers and the gateway's rate-limit counters; an
// in-process adapter serves one instance, a Redis adapter several. Each
// adapter owns the format it keeps answers in; an entry it cannot read is
// a miss.
type Cache interface {
	// Get returns the answer of key, or false when it is absent, expired
	// or unreadable.
	Get(ctx context.Context, key string) (Answer, bool, error)
	// Set stores a under key for ttl.
	Set(ctx context.Context, key string, a Answer, ttl time.Duration) error
	// Incr adds one to the counter key, which starts at zero and expires
	// ttl after its first increment, and returns the new count and the time
	// until the counter expires.
	Incr(ctx context.Context, key string, ttl time.Duration) (int64, time.Duration, error)
}

// Systems gives the EHR systems in force (a driven port; app implements it
// over the EHR systems file, which SIGHUP may reload). A use case asks once
// and keeps the answer to its end, so a request in flight finishes on the
// systems it started with whatever reload happens meanwhile.
type Systems interface {
	// Search returns the systems the search gateway asks for business, in
	// the order of the EHR systems file: those serving it ("": every
	// system, in a single-practice deployment).
	Search(business string) []System
	// Integration returns the integration EHR of business: its name in
	// the EHR systems file, which bookings, holds and Idempotency-Key
	// outcomes record, and its Scheduler; sch is nil when it has none.
	Integration(business string) (name string, sch Scheduler)
	// SchedulerOf returns the Scheduler of the system called name,
	// whichever businesses it serves now (what was booked in it stays
	// there); nil when no system of that name is configured.
	SchedulerOf(name string) Scheduler
	// MultiPractice reports whether some system is bound to businesses.
	MultiPractice() bool
}

// FixedSystems are Systems of a single-practice deployment that never
// change: the same systems for every business.
type FixedSystems struct {
	Searched []System
	// SchedulingName is the name of SchedulingEHR.
	SchedulingName string
	SchedulingEHR  Scheduler // nil: none configured
}

// Search returns f.Searched.
func (f FixedSystems) Search(string) []System { return f.Searched }

// Integration returns f.SchedulingName and f.SchedulingEHR.
func (f FixedSystems) Integration(string) (string, Scheduler) {
	if f.SchedulingEHR == nil {
		return "", nil
	}
	return f.SchedulingName, f.SchedulingEHR
}

// SchedulerOf returns f.SchedulingEHR when name is f.SchedulingName.
func (f FixedSystems) SchedulerOf(name string) Scheduler {
	if name != f.SchedulingName {
		return nil
	}
	return f.SchedulingEHR
}

// MultiPractice is false.
func (f FixedSystems) MultiPractice() bool { return false }
