package bench

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncEHR is a fake FHIR server of Appointments for the sync bench. It
// answers the three searches EHR sync makes — the change search
// (Appointment?_sort=_lastUpdated&_lastUpdated=gt…&_count=…), the window
// listing of the reconciliation (Appointment?date=ge…&date=lt…&_count=…&
// _offset=…&_total=accurate) and a read by id — with self links that echo
// the parameters (it applies them all), Bundle.total and next links, and
// records each request's kind and times. Its appointments hold a
// practitioner and no patient.
type syncEHR struct {
	srv *httptest.Server

	mu      sync.Mutex
	appts   map[string]*syncAppt
	byStart []string       // ids by start (starts never change here)
	log     []syncLogEntry // every change, in lastUpdated order
	last    time.Time      // the newest lastUpdated
	reqs    []syncRequest  // the requests answered since the last take
}

type syncAppt struct {
	id, status, agent string
	start, end        time.Time
	version           int
	updated           time.Time
}

type syncLogEntry struct {
	id string
	at time.Time
}

// syncRequest is one request the fake answered.
type syncRequest struct {
	kind    string // changes, window, read, other
	uri     string
	in, out time.Time
	entries int // appointments in the answer
}

// newSyncEHR starts the fake with n booked appointments starting over the
// next 13 days (50 practitioners, round robin), last updated over the 30
// days before now, oldest first.
func newSyncEHR(b *testing.B, n int) *syncEHR {
	f := &syncEHR{appts: map[string]*syncAppt{}}
	now := time.Now().UTC().Truncate(time.Minute)
	first := now.Add(-30 * 24 * time.Hour)
	startStep, updateStep := 13*24*time.Hour/time.Duration(n), 30*24*time.Hour/time.Duration(n)
	for i := range n {
		start := now.Add(time.Hour + time.Duration(i)*startStep).Truncate(time.Minute)
		a := &syncAppt{id: fmt.Sprintf("ap-%05d", i), status: "booked", agent: fmt.Sprintf("pr-%02d", i%50),
			start: start, end: start.Add(30 * time.Minute), version: 1,
			updated: first.Add(time.Duration(i) * updateStep).Truncate(time.Millisecond)}
		f.appts[a.id] = a
		f.byStart = append(f.byStart, a.id)
		f.log = append(f.log, syncLogEntry{a.id, a.updated})
		f.last = a.updated
	}
	slices.SortStableFunc(f.byStart, func(x, y string) int { return f.appts[x].start.Compare(f.appts[y].start) })
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	b.Cleanup(func() { f.srv.CloseClientConnections(); f.srv.Close() })
	return f
}

// change changes appointment i directly in the EHR (booked ↔ arrived)
// and returns the change's lastUpdated.
func (f *syncEHR) change(i int) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.appts[fmt.Sprintf("ap-%05d", i)]
	at := time.Now().UTC().Truncate(time.Millisecond)
	if !at.After(f.last) {
		at = f.last.Add(time.Millisecond)
	}
	f.last = at
	a.status = map[string]string{"booked": "arrived", "arrived": "booked"}[a.status]
	a.version++
	a.updated = at
	f.log = append(f.log, syncLogEntry{a.id, at})
	return at
}

// take returns the requests since the last take and forgets them.
func (f *syncEHR) take() []syncRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

func (f *syncEHR) serve(w http.ResponseWriter, r *http.Request) {
	in := time.Now()
	q := r.URL.Query()
	var (
		kind   = "other"
		status = http.StatusOK
		body   any
		n      int
	)
	f.mu.Lock()
	switch path := strings.TrimPrefix(r.URL.Path, "/"); {
	case path == "Appointment" && q.Get("_sort") == "_lastUpdated":
		kind = "changes"
		body, n = f.changes(r, q)
	case path == "Appointment" && len(q["date"]) > 0:
		kind = "window"
		body, n = f.window(r, q)
	case strings.HasPrefix(path, "Appointment/"):
		kind = "read"
		if a, ok := f.appts[strings.TrimPrefix(path, "Appointment/")]; ok {
			body, n = a.resource(), 1
		} else {
			status, body = http.StatusNotFound, outcome("not-found")
		}
	default:
		status, body = http.StatusNotFound, outcome("not-supported")
	}
	f.mu.Unlock()
	raw, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/fhir+json")
	w.WriteHeader(status)
	w.Write(raw)
	f.mu.Lock()
	f.reqs = append(f.reqs, syncRequest{kind: kind, uri: r.URL.RequestURI(), in: in, out: time.Now(), entries: n})
	f.mu.Unlock()
}

// changes answers a change search: the appointments last updated after
// _lastUpdated=gt…, oldest first, a page of _count from _offset.
func (f *syncEHR) changes(r *http.Request, q url.Values) (any, int) {
	var since time.Time
	if v, ok := strings.CutPrefix(q.Get("_lastUpdated"), "gt"); ok {
		since, _ = time.Parse(time.RFC3339Nano, v)
	}
	from, _ := slices.BinarySearchFunc(f.log, since, func(e syncLogEntry, t time.Time) int {
		if !e.at.After(t) {
			return -1
		}
		return 1
	})
	var ids []string
	for _, e := range f.log[from:] {
		if f.appts[e.id].updated.Equal(e.at) { // not since superseded
			ids = append(ids, e.id)
		}
	}
	return f.bundle(r, q, ids, false)
}

// window answers the reconciliation's listing: the appointments starting
// in [date=ge…, date=lt…), by start.
func (f *syncEHR) window(r *http.Request, q url.Values) (any, int) {
	var from, to time.Time
	for _, v := range q["date"] {
		if t, ok := strings.CutPrefix(v, "ge"); ok {
			from, _ = time.Parse(time.RFC3339, t)
		} else if t, ok := strings.CutPrefix(v, "lt"); ok {
			to, _ = time.Parse(time.RFC3339, t)
		}
	}
	var ids []string
	for _, id := range f.byStart {
		if s := f.appts[id].start; !s.Before(from) && (to.IsZero() || s.Before(to)) {
			ids = append(ids, id)
		}
	}
	return f.bundle(r, q, ids, true)
}

// bundle is the searchset page of ids that _offset and _count select,
// with a self link echoing the request, a next link when more follow and,
// when total, Bundle.total.
func (f *syncEHR) bundle(r *http.Request, q url.Values, ids []string, total bool) (any, int) {
	count, err := strconv.Atoi(q.Get("_count"))
	if err != nil || count < 1 || count > 1000 {
		count = 100
	}
	offset, _ := strconv.Atoi(q.Get("_offset"))
	offset = min(max(offset, 0), len(ids))
	page := ids[offset:min(offset+count, len(ids))]
	entries := make([]any, len(page))
	for i, id := range page {
		entries[i] = map[string]any{"fullUrl": f.srv.URL + "/Appointment/" + id, "resource": f.appts[id].resource(),
			"search": map[string]any{"mode": "match"}}
	}
	links := []any{map[string]any{"relation": "self", "url": f.srv.URL + r.URL.RequestURI()}}
	if offset+len(page) < len(ids) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("_offset", strconv.Itoa(offset+len(page)))
		links = append(links, map[string]any{"relation": "next", "url": f.srv.URL + r.URL.Path + "?" + next.Encode()})
	}
	b := map[string]any{"resourceType": "Bundle", "type": "searchset", "link": links, "entry": entries}
	if total {
		b["total"] = len(ids)
	}
	return b, len(page)
}

// resource is a's FHIR Appointment.
func (a *syncAppt) resource() map[string]any {
	return map[string]any{"resourceType": "Appointment", "id": a.id, "status": a.status,
		"meta":  map[string]any{"versionId": strconv.Itoa(a.version), "lastUpdated": a.updated.Format("2006-01-02T15:04:05.000Z")},
		"start": a.start.Format(time.RFC3339), "end": a.end.Format(time.RFC3339),
		"participant": []any{map[string]any{"actor": map[string]any{"reference": "Practitioner/" + a.agent}, "status": "accepted"}}}
}

func outcome(code string) map[string]any {
	return map[string]any{"resourceType": "OperationOutcome", "issue": []any{map[string]any{"severity": "error", "code": code}}}
}
