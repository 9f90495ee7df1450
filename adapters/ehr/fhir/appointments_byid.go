package fhir

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/carebridge/carebridge/core/ehr"
)

// Bounds of a search by id (Appointment?_id=a,b,…): at most idSearchMax
// ids, whose comma list is at most idSearchBytes long, so the URL stays
// well under the 8 KiB that servers commonly accept (a FHIR id is at most
// 64 characters).
const (
	idSearchMax   = 100
	idSearchBytes = 4000
	// readEachAtOnce bounds the reads one by one in flight at once.
	readEachAtOnce = 8
)

// errIgnoredID is a search by id answered with an appointment not asked
// for: the server ignores _id.
var errIgnoredID = errors.New("the server ignores the search parameter _id")

// GetAppointments reads the Appointments of ids with one search by id a
// batch (_id with a comma list, _count the batch's size, its pages
// followed) and returns those the server holds, each once; an id that is
// no FHIR id is left out. A server that refuses the search (400) or that
// answers it with an appointment not asked for (it ignores _id) has that
// batch read one by one instead: nothing not asked for is ever returned.
func (s *Scheduler) GetAppointments(ctx context.Context, ids []string) ([]ehr.Appointment, error) {
	var out []ehr.Appointment
	for _, batch := range idBatches(ids) {
		status, found, err := s.searchByID(ctx, batch)
		if errors.Is(err, errIgnoredID) || status == http.StatusBadRequest {
			found, err = s.readEach(ctx, batch)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, found...)
	}
	return out, nil
}

// idBatches cuts the valid ids of ids, once each, into batches of a search
// by id.
func idBatches(ids []string) [][]string {
	var out [][]string
	var cur []string
	seen := map[string]bool{}
	size := 0
	for _, id := range ids {
		if !validID(id) || seen[id] {
			continue
		}
		seen[id] = true
		if len(cur) == idSearchMax || size+len(id)+1 > idSearchBytes {
			out, cur, size = append(out, cur), nil, 0
		}
		cur, size = append(cur, id), size+len(id)+1
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// searchByID searches the Appointments of batch by their ids; status is
// that of an answer that failed.
func (s *Scheduler) searchByID(ctx context.Context, batch []string) (int, []ehr.Appointment, error) {
	asked := make(map[string]bool, len(batch))
	for _, id := range batch {
		asked[id] = true
	}
	q := url.Values{"_id": {strings.Join(batch, ",")}, "_count": {strconv.Itoa(len(batch))}}
	var out []ehr.Appointment
	status, err := s.c.searchAll(ctx, "Appointment", q, func(e entry) error {
		if e.typ != "Appointment" || !e.matched() {
			return nil
		}
		ap, err := decodeEntry[appointment](s.c, e)
		if err != nil {
			return err
		}
		a := toAppointment(ap, s.c.http.Name(), s.log)
		if !asked[a.ID] {
			return errIgnoredID
		}
		asked[a.ID] = false
		out = append(out, a)
		return nil
	})
	return status, out, err
}

// readEach reads the Appointments of batch one by one, a few at a time;
// one the server does not hold is left out.
func (s *Scheduler) readEach(ctx context.Context, batch []string) ([]ehr.Appointment, error) {
	found := make([]*ehr.Appointment, len(batch))
	errs := make([]error, len(batch))
	sem := make(chan struct{}, readEachAtOnce)
	var wg sync.WaitGroup
	for i, id := range batch {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			a, err := s.GetAppointment(ctx, id)
			switch {
			case err == nil:
				found[i] = &a
			case !errors.Is(err, ehr.ErrAppointmentNotFound):
				errs[i] = err
			}
		})
	}
	wg.Wait()
	var out []ehr.Appointment
	for i, a := range found {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if a != nil {
			out = append(out, *a)
		}
	}
	return out, nil
}
