package ehr

import (
	"context"
	"sync"

	"github.com/carebridge/carebridge/core"
)

// A record search (the contract's "Clinical records"): the people of the
// query are found in each system as a search of people finds them, then
// each system that found some is asked their records of the type, which
// are filtered by the date range and merged.

// ErrQueryTooBroad is a record search whose query matches more than
// MaxRecordPeople people in one system.
var ErrQueryTooBroad = &core.Error{Kind: core.KindInvalid, Code: "query_too_broad", Message: "The query matches too many people"}

// MaxRecordPeople is the most people of one system whose records one
// search reads.
const MaxRecordPeople = 10

// recordReadsInFlight bounds the people of one system whose records are
// read at once.
const recordReadsInFlight = 4

// errNoRecordSearch is the failure of a system whose adapter cannot
// search clinical records at all.
var errNoRecordSearch = &core.Error{Kind: core.KindBadGateway, Code: "record_type_not_supported", Message: "The system cannot search clinical records"}

// searchRecords finds the people of v's query in every system (without
// the date range), refuses the search when one system finds more than
// MaxRecordPeople (before any record is read), then reads the records of
// v's type of each system's people, keeps those in v's date range and
// merges them. A system that fails either step is among the failures and
// its records are left out.
func (s *Service) searchRecords(ctx context.Context, systems []System, v validated) (Answer, []SourceError, error) {
	q := v.query
	q.Max = MaxRecordPeople + 1
	found, errs := findPeople(ctx, systems, q)
	for i, sys := range systems {
		if errs[i] == nil && len(found[i]) > MaxRecordPeople {
			return Answer{}, nil, ErrQueryTooBroad.WithMessage(
				"The query matches more than %d people in %s; narrow it with identifier:, or a name with birthdate:",
				MaxRecordPeople, sys.Name)
		}
	}
	_, _, ok := outcomes(systems, errs)
	patients := tagged(systems, found, ok)

	sets := make([]SourceRecords, len(systems))
	var wg sync.WaitGroup
	for _, i := range ok {
		wg.Go(func() {
			rq := RecordQuery{Type: v.recordType, From: v.from, To: v.to}
			sets[i].Source = systems[i].Name
			sets[i].Records, errs[i] = readRecords(ctx, systems[i], found[i], rq)
		})
	}
	wg.Wait()

	sources, failures, ok := outcomes(systems, errs)
	read := make([]SourceRecords, len(ok))
	for j, i := range ok {
		read[j] = sets[i]
	}
	return Answer{Patients: patients, RecordSets: read, Sources: sources}, failures, nil
}

// personIDs tells the id, in a search of people, of the person a system's
// patient is, from the people the systems found, matched as a search of
// people matches them.
func personIDs(people []Person) func(source, patientID string) string {
	ids := map[SourceRef]string{}
	for _, person := range people {
		for _, ref := range person.Sources {
			ids[ref] = person.ID
		}
	}
	return func(source, patientID string) string {
		return ids[SourceRef{Source: source, PatientID: patientID}]
	}
}

// readRecords reads the records of q's type of each of patients in sys,
// a few people at once, and keeps those in q's date range — and only
// those of the person and type asked: a server that ignores a search
// parameter must not put another person's records under this one. The
// first failure, in the order of patients, is the system's.
func readRecords(ctx context.Context, sys System, patients []Patient, q RecordQuery) ([]Record, error) {
	if sys.Records == nil {
		return nil, errNoRecordSearch.WithMessage("%s cannot search clinical records", sys.Name)
	}
	per := make([][]Record, len(patients))
	errs := make([]error, len(patients))
	slots := make(chan struct{}, recordReadsInFlight)
	var wg sync.WaitGroup
	for i, p := range patients {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			pq := q
			pq.PatientID = p.ID
			per[i], errs[i] = sys.Records.SearchRecords(ctx, pq)
		})
	}
	wg.Wait()
	out := []Record{}
	for i := range patients {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, r := range per[i] {
			if r.PatientID == patients[i].ID && r.Type == q.Type && InDateRange(r.Date, q.From, q.To) {
				out = append(out, r)
			}
		}
	}
	return out, nil
}
