package fhir

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core/ehr"
)

// The change feed (ehr.ChangeFeed): the Appointments the server changed
// after a time, by their meta.lastUpdated.

// changesPageSize is the largest _count of a change search.
const changesPageSize = 100

var _ ehr.ChangeFeed = (*Scheduler)(nil)

// AppointmentChanges searches Appointment?_lastUpdated=gt<since>&
// _sort=_lastUpdated (no _lastUpdated for the zero since; since is sent
// to the millisecond, rounded down, and what the server returns at or
// before since is left out here) and returns the changes oldest first, at
// most limit (see ehrclient.CutChanges for the one exception: more than limit
// changes of one instant), with more when there are others.
//
// Each change is the Appointment as the scheduler reads it, with
// UpdatedAt its meta.lastUpdated, Ref the booking reference of our
// identifier (IdentifierSystem) when Carebridge booked it, and Version its
// meta.versionId, else its lastUpdated (RFC 3339, UTC, nanoseconds). An
// Appointment without an id, a meta.lastUpdated, a known status, a start
// before its end or a Practitioner is left out and logged (its id and the
// reason, nothing about the patient); one that has a lastUpdated still
// moves the feed past it, so it never blocks it.
//
// The server's pages are not walked with its next links while it sorts:
// each batch of up to 100 is a new search from the last instant read (a
// change made while paging can shift an offset page and hide a change),
// and a batch's last instant, whose other changes may be on the next
// page, is left to the next search — unless one instant fills the whole
// page, whose next links are then followed past it. A server that does
// not apply _sort or _lastUpdated (its self link leaves them out, or its
// matches come out of order or before since) is read to the end — at most
// MaxScan matches, else CodeListingInexact — and sorted here.
//
// The batch's Clock is the server's HTTP Date of the last page read (the
// latest of them): the EHR's own clock when it answered, which the
// poller's watermark never passes.
func (s *Scheduler) AppointmentChanges(ctx context.Context, since time.Time, limit int) (ehr.ChangeBatch, error) {
	n := max(limit, 1)
	var (
		out   []ehr.AppointmentChange
		clock time.Time
	)
	from := since
	for range maxScanPages {
		r, err := s.changesRound(ctx, from, n+1-len(out))
		if err != nil {
			return ehr.ChangeBatch{}, err
		}
		if r.fullRead {
			return s.changesFullRead(ctx, since, n)
		}
		clock = latest(clock, r.clock)
		out = append(out, r.changes...)
		if !r.more || len(out) > n {
			cut, more := ehrclient.CutChanges(out, n)
			return ehr.ChangeBatch{Changes: cut, More: more || r.more, Clock: clock}, nil
		}
		from = r.through
	}
	return ehr.ChangeBatch{}, s.c.paging(CodeListingInexact, fmt.Sprintf("needs more than %d searches for one batch of appointment changes", maxScanPages))
}

// latest is the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// changesQuery is the change search from (the zero time: from the first),
// count a page.
func changesQuery(from time.Time, count int) url.Values {
	q := url.Values{"_sort": {"_lastUpdated"}, "_count": {strconv.Itoa(count)}}
	if !from.IsZero() {
		q.Set("_lastUpdated", "gt"+from.UTC().Truncate(time.Millisecond).Format("2006-01-02T15:04:05.000Z07:00"))
	}
	return q
}

// changeMark is an Appointment of a change search: its lastUpdated, and
// the change unless it is unusable.
type changeMark struct {
	at     time.Time
	change *ehr.AppointmentChange
}

// changesRound is the result of one search of the changes from a time.
type changesRound struct {
	changes  []ehr.AppointmentChange
	more     bool      // the server holds changes after through
	through  time.Time // the last instant read whole
	fullRead bool      // the server did not apply _sort or _lastUpdated
	clock    time.Time // the server's Date of its last page (zero: none)
}

// changesRound searches the changes after from, a page of up to want
// (at least 2), and reads on with next links only while every change
// read shares one instant.
func (s *Scheduler) changesRound(ctx context.Context, from time.Time, want int) (changesRound, error) {
	q := changesQuery(from, min(max(want, 2), changesPageSize))
	floor := from.UTC().Truncate(time.Millisecond)
	var (
		r     changesRound
		marks []changeMark
	)
	_, err := s.c.searchPages(ctx, "Appointment", q, false, func(b bundle, entries []entry) (bool, error) {
		r.clock = latest(r.clock, b.date)
		if !selfApplied(b, q, "_sort", "_lastUpdated") {
			r.fullRead = true
			return false, nil
		}
		for _, m := range s.changeMarks(entries, from) {
			if !from.IsZero() && !m.at.After(floor) || len(marks) > 0 && m.at.Before(marks[len(marks)-1].at) {
				r.fullRead = true // before since, or out of order: the server did not apply the search
				return false, nil
			}
			if m.at.After(from) {
				marks = append(marks, m)
			}
		}
		if b.next() == "" {
			r.take(marks, false)
			return false, nil
		}
		if last := trailingInstant(marks); last > 0 {
			r.take(marks[:last], true)
			return false, nil
		}
		return true, nil // one instant, or none, fills the page: read on past it
	})
	return r, err
}

// take keeps the changes of marks (each after the last), of which the
// server holds more (or not) after the last one.
func (r *changesRound) take(marks []changeMark, more bool) {
	r.more = more
	for _, m := range marks {
		if m.change != nil {
			r.changes = append(r.changes, *m.change)
		}
		r.through = m.at
	}
}

// trailingInstant is the index of the first of the marks of the last
// instant (0 when there are none, or they all share one instant).
func trailingInstant(marks []changeMark) int {
	i := len(marks) - 1
	for i > 0 && marks[i-1].at.Equal(marks[i].at) {
		i--
	}
	return max(i, 0)
}

// selfApplied reports whether the bundle's self link holds each of the
// keys of q that q has, with q's value: a server leaves out of it the
// parameters it ignored. A bundle without a self link is taken at its
// word.
func selfApplied(b bundle, q url.Values, keys ...string) bool {
	for _, l := range b.Link {
		if l.Relation != "self" {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(l.URL))
		if err != nil {
			return false
		}
		used := u.Query()
		for _, k := range keys {
			if v := q.Get(k); v != "" && used.Get(k) != v {
				return false
			}
		}
	}
	return true
}

// changesFullRead reads every change after since (a server that does not
// sort them or filter them by time), at most MaxScan, and cuts the sorted
// list at n.
func (s *Scheduler) changesFullRead(ctx context.Context, since time.Time, n int) (ehr.ChangeBatch, error) {
	var (
		out   []ehr.AppointmentChange
		clock time.Time
	)
	_, err := s.c.searchAll(ctx, "Appointment", changesQuery(since, changesPageSize), func(e entry) error {
		clock = latest(clock, e.date)
		for _, m := range s.changeMarks([]entry{e}, since) {
			if m.change != nil && m.at.After(since) {
				out = append(out, *m.change)
			}
		}
		return nil
	})
	if err != nil {
		return ehr.ChangeBatch{}, err
	}
	ehrclient.SortChanges(out)
	cut, more := ehrclient.CutChanges(out, n)
	return ehr.ChangeBatch{Changes: cut, More: more, Clock: clock}, nil
}

// changeMarks reads the Appointments of a page: those without a
// lastUpdated are left out, and those that are unusable are marks without
// a change; either is logged when it is after from.
func (s *Scheduler) changeMarks(entries []entry, from time.Time) []changeMark {
	var out []changeMark
	for _, e := range entries {
		if e.typ != "Appointment" || !e.matched() {
			continue
		}
		ap, err := decodeEntry[appointment](s.c, e)
		if err != nil {
			s.skipChange(e.id, "the Appointment is malformed")
			continue
		}
		m, why := s.changeMark(ap)
		if why != "" && (m.at.IsZero() || m.at.After(from)) {
			s.skipChange(ap.ID, why)
		}
		if !m.at.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

// changeMark converts ap into a change; why says what makes it unusable
// (the mark then has no change, and no time either when it has no id or
// lastUpdated).
func (s *Scheduler) changeMark(ap appointment) (m changeMark, why string) {
	id := strings.TrimSpace(ap.ID)
	if ap.Meta != nil {
		m.at = instant(ap.Meta.LastUpdated)
	}
	if !validID(id) || m.at.IsZero() {
		return changeMark{}, "no id or no meta.lastUpdated"
	}
	if _, ok := fromFHIRStatus[strings.ToLower(strings.TrimSpace(ap.Status))]; !ok {
		return m, "no known status"
	}
	a := toAppointment(ap, s.c.http.Name(), s.log)
	switch {
	case a.Start.IsZero() || !a.End.After(a.Start):
		return m, "no start before its end"
	case a.AgentID == "":
		return m, "no Practitioner participant"
	}
	version := strings.TrimSpace(ap.Meta.VersionID)
	if version == "" {
		version = m.at.UTC().Format(time.RFC3339Nano)
	}
	m.change = &ehr.AppointmentChange{Appointment: a, Version: version}
	return m, ""
}

// skipChange logs an appointment change left out: its id and why, never
// its patient.
func (s *Scheduler) skipChange(id, why string) {
	s.log.Warn("fhir: appointment change skipped", slog.String("appointment", clipN(id, 64)), slog.String("reason", why))
}
