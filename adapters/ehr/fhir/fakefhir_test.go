package fhir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// fakeFHIR is an in-memory FHIR R4 server with just enough of the REST API
// for the scheduler: search (with the parameters below, comma lists as OR,
// repeated parameters as AND, ge/gt/le/lt on dates, _count/_offset paging
// with next links and _revinclude=PractitionerRole:practitioner), read,
// create (with If-None-Exist) and update (with If-Match) of Practitioner,
// PractitionerRole, Schedule, Slot and Appointment; search of the nine
// clinical types by patient (and by their US Core date parameter where it
// covers the clinical date); _lastUpdated (gt, ge, …) and
// _sort=_lastUpdated (ascending; by id among equal instants) on every
// type. Every write sets meta.versionId (1, 2, …) and meta.lastUpdated,
// to the millisecond and strictly later than the write before. An
// unknown search parameter is a 400, as on a strict server.
type fakeFHIR struct {
	*httptest.Server
	t *testing.T

	mu        sync.Mutex
	resources map[string][]map[string]any // by type, in creation order
	seq       int
	lastWrite time.Time       // meta.lastUpdated of the last write
	requests  []*http.Request // copies of those received, in order

	// pageSize is the largest page the server returns (default 10).
	pageSize int
	// revinclude: "" honours _revinclude, "ignore" drops it silently,
	// "refuse" answers 400.
	revinclude string
	// ignored names search parameters the server accepts but does not
	// apply (a lenient server), so the adapter must filter itself.
	ignored map[string]bool
	// refuse answers any request for these types with the status (a
	// server that cannot search a type: 400 or 404).
	refuse map[string]int
	// intercept, when set, sees each request first; it answers it when it
	// returns true.
	intercept func(w http.ResponseWriter, r *http.Request, body []byte) bool
}

func newFakeFHIR(t *testing.T) *fakeFHIR {
	t.Helper()
	f := &fakeFHIR{t: t, resources: map[string][]map[string]any{}, pageSize: 10, ignored: map[string]bool{},
		refuse: map[string]int{}}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// add stores resource (a FHIR JSON object) as the server would on create,
// and returns its id.
func (f *fakeFHIR) add(resource map[string]any) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.store(resource)
}

func (f *fakeFHIR) store(resource map[string]any) string {
	typ := resource["resourceType"].(string)
	f.seq++
	id := fmt.Sprintf("%s-%d", strings.ToLower(typ[:3]), f.seq)
	resource["id"] = id
	resource["meta"] = map[string]any{"versionId": "1", "lastUpdated": f.tick()}
	f.resources[typ] = append(f.resources[typ], resource)
	return id
}

// tick is the lastUpdated of a write: now to the millisecond, and
// strictly after the last write's.
func (f *fakeFHIR) tick() string {
	at := time.Now().UTC().Truncate(time.Millisecond)
	if !at.After(f.lastWrite) {
		at = f.lastWrite.Add(time.Millisecond)
	}
	f.lastWrite = at
	return at.Format(time.RFC3339Nano)
}

// modify changes the stored typ/id as a write of the EHR's own screens
// would: change edits it, and it gets a new version and lastUpdated.
func (f *fakeFHIR) modify(typ, id string, change func(res map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	res := f.find(typ, id)
	if res == nil {
		f.t.Fatalf("fake FHIR: no %s/%s", typ, id)
	}
	change(res)
	version, _ := strconv.Atoi(fmt.Sprint(res["meta"].(map[string]any)["versionId"]))
	res["meta"] = map[string]any{"versionId": strconv.Itoa(version + 1), "lastUpdated": f.tick()}
}

func (f *fakeFHIR) get(typ, id string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.find(typ, id)
}

func (f *fakeFHIR) find(typ, id string) map[string]any {
	for _, r := range f.resources[typ] {
		if r["id"] == id {
			return r
		}
	}
	return nil
}

func (f *fakeFHIR) count(typ string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.resources[typ])
}

// got lists the requests received as "METHOD /path?query".
func (f *fakeFHIR) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.requests))
	for i, r := range f.requests {
		out[i] = r.Method + " " + r.URL.RequestURI()
	}
	return out
}

// gotRequests returns copies of the requests received, in order.
func (f *fakeFHIR) gotRequests() []*http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// addAgent seeds a Practitioner (name, e-mail, time zone extension), one
// PractitionerRole (specialty text, locations), a Schedule and a free Slot
// for each period, written by hand as an EHR would hold them.
func (f *fakeFHIR) addAgent(a ehr.Agent, free []ehr.Period) string {
	p := map[string]any{
		"resourceType": "Practitioner",
		"active":       true,
		"name": []any{map[string]any{
			"use": "official", "text": a.Name, "family": a.LastName, "given": []any{a.FirstName},
		}},
		"telecom": []any{
			map[string]any{"system": "phone", "value": "+1 555 0100"},
			map[string]any{"system": "email", "value": a.Email},
		},
	}
	if a.Timezone != "" {
		p["extension"] = []any{map[string]any{"url": "http://hl7.org/fhir/StructureDefinition/timezone", "valueCode": a.Timezone}}
	}
	id := f.add(p)
	role := map[string]any{
		"resourceType": "PractitionerRole",
		"active":       true,
		"practitioner": map[string]any{"reference": "Practitioner/" + id},
		"specialty": []any{map[string]any{
			"coding": []any{map[string]any{"system": "urn:test", "code": "x", "display": a.Specialty}},
		}},
	}
	var locs []any
	for _, l := range a.LocationIDs {
		locs = append(locs, map[string]any{"reference": "Location/" + l})
	}
	if len(locs) > 0 {
		role["location"] = locs
	}
	f.add(role)
	sched := f.add(map[string]any{
		"resourceType": "Schedule",
		"active":       true,
		"actor":        []any{map[string]any{"reference": "Practitioner/" + id}},
	})
	for _, p := range free {
		f.add(map[string]any{
			"resourceType": "Slot",
			"schedule":     map[string]any{"reference": "Schedule/" + sched},
			"status":       "free",
			"start":        p.Start.Format(time.RFC3339),
			"end":          p.End.Format(time.RFC3339),
		})
	}
	return id
}

func (f *fakeFHIR) outcome(w http.ResponseWriter, status int, text string) {
	writeFHIR(w, status, fmt.Sprintf(`{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"processing","diagnostics":%q}]}`, text))
}

func (f *fakeFHIR) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(context.Background()))
	intercept := f.intercept
	f.mu.Unlock()
	if intercept != nil && intercept(w, r, body) {
		return
	}
	f.handle(w, r, body)
}

// handle answers r as the server does (intercept may call it too).
func (f *fakeFHIR) handle(w http.ResponseWriter, r *http.Request, body []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()

	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	typ := parts[0]
	if _, ok := searchParams[typ]; !ok {
		f.outcome(w, 404, "unknown resource type "+typ)
		return
	}
	if status := f.refuse[typ]; status != 0 {
		f.outcome(w, status, typ+" is not supported")
		return
	}
	switch {
	case r.Method == http.MethodGet && len(parts) == 1:
		f.search(w, r, typ)
	case r.Method == http.MethodGet && len(parts) == 2:
		res := f.find(typ, parts[1])
		if res == nil {
			f.outcome(w, 404, "Not found")
			return
		}
		f.write(w, 200, res)
	case r.Method == http.MethodPost && len(parts) == 1:
		f.create(w, r, typ, body)
	case r.Method == http.MethodPut && len(parts) == 2:
		f.update(w, r, typ, parts[1], body)
	default:
		f.outcome(w, 405, "method not allowed")
	}
}

func (f *fakeFHIR) write(w http.ResponseWriter, status int, res map[string]any) {
	raw, err := json.Marshal(res)
	if err != nil {
		f.t.Errorf("fake FHIR: %v", err)
	}
	if m, ok := res["meta"].(map[string]any); ok {
		w.Header().Set("ETag", fmt.Sprintf(`W/"%v"`, m["versionId"]))
	}
	writeFHIR(w, status, string(raw))
}

func (f *fakeFHIR) create(w http.ResponseWriter, r *http.Request, typ string, body []byte) {
	var res map[string]any
	if err := json.Unmarshal(body, &res); err != nil || res["resourceType"] != typ {
		f.outcome(w, 400, "not a "+typ)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/fhir+json" {
		f.outcome(w, 415, "content type "+ct)
		return
	}
	if cond := r.Header.Get("If-None-Exist"); cond != "" {
		q, err := url.ParseQuery(cond)
		if err != nil {
			f.outcome(w, 400, "bad If-None-Exist")
			return
		}
		matches, err := f.match(typ, q)
		if err != nil {
			f.outcome(w, 400, err.Error())
			return
		}
		switch len(matches) {
		case 0:
		case 1:
			f.write(w, 200, matches[0])
			return
		default:
			f.outcome(w, 412, "several matches")
			return
		}
	}
	id := f.store(res)
	w.Header().Set("Location", fmt.Sprintf("%s/%s/%s/_history/1", f.URL, typ, id))
	f.write(w, 201, res)
}

func (f *fakeFHIR) update(w http.ResponseWriter, r *http.Request, typ, id string, body []byte) {
	cur := f.find(typ, id)
	if cur == nil {
		f.outcome(w, 404, "Not found")
		return
	}
	var res map[string]any
	if err := json.Unmarshal(body, &res); err != nil || res["resourceType"] != typ || res["id"] != id {
		f.outcome(w, 400, "not this "+typ)
		return
	}
	version, _ := strconv.Atoi(fmt.Sprint(cur["meta"].(map[string]any)["versionId"]))
	if m := r.Header.Get("If-Match"); m != "" && m != fmt.Sprintf(`W/"%d"`, version) {
		f.outcome(w, 412, "version conflict")
		return
	}
	res["meta"] = map[string]any{"versionId": strconv.Itoa(version + 1), "lastUpdated": f.tick()}
	list := f.resources[typ]
	for i := range list {
		if list[i]["id"] == id {
			list[i] = res
		}
	}
	f.write(w, 200, res)
}

func (f *fakeFHIR) search(w http.ResponseWriter, r *http.Request, typ string) {
	q := r.URL.Query()
	count, offset := f.pageSize, 0
	if c, err := strconv.Atoi(q.Get("_count")); err == nil && c > 0 {
		count = min(c, f.pageSize)
	}
	if o, err := strconv.Atoi(q.Get("_offset")); err == nil && o > 0 {
		offset = o
	}
	rev := q.Get("_revinclude")
	if rev != "" && (f.revinclude == "refuse" || rev != "PractitionerRole:practitioner" || typ != "Practitioner") {
		f.outcome(w, 400, "unsupported _revinclude "+rev)
		return
	}
	matches, err := f.match(typ, q)
	if err != nil {
		f.outcome(w, 400, err.Error())
		return
	}
	if sort := q.Get("_sort"); sort != "" && !f.ignored["_sort"] {
		if sort != "_lastUpdated" {
			f.outcome(w, 400, "unsupported _sort "+sort)
			return
		}
		matches = slices.Clone(matches)
		slices.SortStableFunc(matches, func(a, b map[string]any) int {
			return strings.Compare(lastUpdated(a)+"|"+a["id"].(string), lastUpdated(b)+"|"+b["id"].(string))
		})
	}
	pg := matches[min(offset, len(matches)):min(offset+count, len(matches))]
	var entries []any
	for _, m := range pg {
		entries = append(entries, map[string]any{"resource": m, "search": map[string]any{"mode": "match"}})
	}
	if rev != "" && f.revinclude == "" {
		for _, p := range pg {
			for _, role := range f.resources["PractitionerRole"] {
				if ref(role, "practitioner") == "Practitioner/"+p["id"].(string) {
					entries = append(entries, map[string]any{"resource": role, "search": map[string]any{"mode": "include"}})
				}
			}
		}
	}
	// The self link holds the parameters the server used: not those it
	// ignores.
	used := url.Values{}
	for k, v := range q {
		if !f.ignored[k] {
			used[k] = v
		}
	}
	links := []any{map[string]any{"relation": "self", "url": f.URL + "/" + typ + "?" + used.Encode()}}
	if offset+count < len(matches) {
		next := url.Values{}
		for k, v := range q {
			next[k] = v
		}
		next.Set("_offset", strconv.Itoa(offset+count))
		links = append(links, map[string]any{"relation": "next", "url": f.URL + "/" + typ + "?" + next.Encode()})
	}
	f.write(w, 200, map[string]any{"resourceType": "Bundle", "type": "searchset", "total": len(matches), "link": links, "entry": entries})
}

// match returns the resources of typ that q selects.
func (f *fakeFHIR) match(typ string, q url.Values) ([]map[string]any, error) {
	params := searchParams[typ]
	for k := range q {
		if k == "_count" || k == "_offset" || k == "_revinclude" || k == "_total" || k == "_sort" {
			continue
		}
		if _, ok := params[k]; !ok && k != "_lastUpdated" {
			return nil, fmt.Errorf("unknown search parameter %s for %s", k, typ)
		}
	}
	var out []map[string]any
	for _, res := range f.resources[typ] {
		ok := true
		for k, values := range q {
			m := params[k]
			if k == "_lastUpdated" {
				m = func(res map[string]any, v string) bool { return compareDate(field(res, "meta", "lastUpdated"), v) }
			}
			if m == nil || f.ignored[k] {
				continue
			}
			for _, v := range values {
				hit := false
				for _, alt := range strings.Split(v, ",") {
					if m(res, alt) {
						hit = true
						break
					}
				}
				ok = ok && hit
			}
		}
		if ok {
			out = append(out, res)
		}
	}
	return out, nil
}
