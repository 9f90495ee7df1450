package fhir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/carebridge/carebridge/core/ehr"
)

// ListAgents lists the active practitioners with their roles, in the
// server's order. Name is sent to the server (one name parameter a word)
// and checked here: each word must begin a word of the agent's name,
// ignoring case. Specialty matches any specialty of the agent's roles,
// ignoring case; LocationID any of its locations.
//
// Without a specialty or location, the server pages: one search for the
// page asked (_count, _offset, _total=accurate, roles by _revinclude) and
// totalCount is its Bundle.total. When the server does not page that way,
// or the page holds a practitioner the adapter would not list (the server
// ignored a filter), and with a specialty or location (which live on
// PractitionerRole), every match is read (at most MaxScan) and filtered and
// paged here. A listing is exact or an error (see searchAll, searchPage).
func (s *Scheduler) ListAgents(ctx context.Context, f ehr.AgentFilter) (ehr.Page[ehr.Agent], error) {
	page, limit := pageBounds(f.Page, f.Limit)
	q := url.Values{"active:not": {"false"}}
	words := strings.Fields(strings.ToLower(f.Name))
	for _, w := range words {
		q.Add("name", w)
	}
	specialty := strings.TrimSpace(f.Specialty)
	location := strings.TrimSpace(f.LocationID)
	keep := func(r agentRecord) bool {
		switch {
		case !nameMatches(r.Agent, words):
		case specialty != "" && !slices.ContainsFunc(r.specialties, func(s string) bool { return strings.EqualFold(s, specialty) }):
		case location != "" && !slices.Contains(r.LocationIDs, location):
		default:
			return true
		}
		return false
	}
	if specialty == "" && location == "" {
		var total int
		recs, matches, ok, err := s.agents(ctx, q, func(typ string, q url.Values, visit func(entry) error) (int, error) {
			t, ok, status, err := s.searchPage(ctx, typ, q, (page-1)*limit, limit, visit)
			if !ok && err == nil {
				return 0, errNotPaged
			}
			total = t
			return status, err
		})
		if err != nil {
			return ehr.Page[ehr.Agent]{}, err
		}
		if ok && len(recs) == matches && !slices.ContainsFunc(recs, func(r agentRecord) bool { return !keep(r) }) {
			items := make([]ehr.Agent, len(recs))
			for i, r := range recs {
				items[i] = r.Agent
			}
			return ehr.Page[ehr.Agent]{Items: items, TotalCount: total, Page: page, Limit: limit}, nil
		}
	}
	q.Set("_count", strconv.Itoa(MaxPageSize))
	recs, _, _, err := s.agents(ctx, q, s.searchAllFunc(ctx))
	if err != nil {
		return ehr.Page[ehr.Agent]{}, err
	}
	var items []ehr.Agent
	for _, r := range recs {
		if keep(r) {
			items = append(items, r.Agent)
		}
	}
	return paginate(items, page, limit), nil
}

// nameMatches reports whether every word begins a word of a's names.
func nameMatches(a ehr.Agent, words []string) bool {
	parts := strings.FieldsFunc(strings.ToLower(a.Name+" "+a.FirstName+" "+a.LastName), func(r rune) bool {
		return r == ' ' || r == '-' || r == ',' || r == '.' || r == '\''
	})
	for _, w := range words {
		if !slices.ContainsFunc(parts, func(p string) bool { return strings.HasPrefix(p, w) }) {
			return false
		}
	}
	return true
}

// GetAgent returns the active practitioner id with its roles.
func (s *Scheduler) GetAgent(ctx context.Context, id string) (ehr.Agent, error) {
	if !validID(id) {
		return ehr.Agent{}, ehr.ErrAgentNotFound
	}
	recs, _, _, err := s.agents(ctx, url.Values{"_id": {id}, "_count": {strconv.Itoa(MaxPageSize)}}, s.searchAllFunc(ctx))
	if err != nil {
		return ehr.Agent{}, err
	}
	for _, r := range recs {
		if r.ID == id {
			return r.Agent, nil
		}
	}
	return ehr.Agent{}, ehr.ErrAgentNotFound
}

// agents searches Practitioners with q through search, with their roles:
// included by _revinclude=PractitionerRole:practitioner, or — when the
// server refuses it (400) or sends no role at all — from PractitionerRole
// searches by practitioner. Inactive practitioners and roles are left out;
// matches is how many Practitioners the server matched, in the records or
// not. ok is false when search answered errNotPaged.
func (s *Scheduler) agents(ctx context.Context, q url.Values, searchPr searchFunc) (recs []agentRecord, matches int, ok bool, err error) {
	var (
		prs      []practitioner
		seen     map[string]bool
		roles    map[string][]practitionerRole
		seenRole map[string]bool
		gotRoles bool
	)
	addRole := func(r practitionerRole) {
		if seenRole[r.ID] && r.ID != "" {
			return
		}
		seenRole[r.ID] = true
		if typ, pid, ok := splitReference(r.Practitioner.Reference); ok && typ == "Practitioner" {
			roles[pid] = append(roles[pid], r)
		}
	}
	visit := func(e entry) error {
		switch e.typ {
		case "Practitioner":
			if e.mode == "include" {
				return nil
			}
			var p practitioner
			if err := json.Unmarshal(e.raw, &p); err != nil {
				return s.bad(fmt.Sprintf("entry %d is not a valid Practitioner", e.index), err)
			}
			matches++
			if p.ID = strings.TrimSpace(p.ID); p.ID != "" && !seen[p.ID] {
				seen[p.ID] = true
				prs = append(prs, p)
			}
		case "PractitionerRole":
			var r practitionerRole
			if err := json.Unmarshal(e.raw, &r); err != nil {
				return s.bad(fmt.Sprintf("entry %d is not a valid PractitionerRole", e.index), err)
			}
			gotRoles = true
			addRole(r)
		}
		return nil
	}
	search := func() (int, error) {
		prs, seen, roles, seenRole, gotRoles, matches = nil, map[string]bool{}, map[string][]practitionerRole{}, map[string]bool{}, false, 0
		if s.noRevinclude.Load() {
			q.Del("_revinclude")
		} else {
			q.Set("_revinclude", "PractitionerRole:practitioner")
		}
		return searchPr("Practitioner", q, visit)
	}
	status, err := search()
	if err != nil && status == http.StatusBadRequest && q.Has("_revinclude") {
		s.noRevinclude.Store(true)
		s.log.Info("fhir: the server refuses _revinclude; practitioner roles come from a second search",
			slog.String("ehr", s.c.http.Name()))
		_, err = search()
	}
	if errors.Is(err, errNotPaged) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	prs = slices.DeleteFunc(prs, func(p practitioner) bool { return (p.Active != nil && !*p.Active) || !validID(p.ID) })
	if !gotRoles && len(prs) > 0 {
		for chunk := range slices.Chunk(prs, refChunk) {
			refs := make([]string, len(chunk))
			for i, p := range chunk {
				refs[i] = "Practitioner/" + p.ID
			}
			rq := url.Values{"practitioner": {strings.Join(refs, ",")}, "_count": {strconv.Itoa(MaxPageSize)}}
			if _, err := s.searchAll(ctx, "PractitionerRole", rq, func(e entry) error {
				if e.typ != "PractitionerRole" {
					return nil
				}
				var r practitionerRole
				if err := json.Unmarshal(e.raw, &r); err != nil {
					return s.bad(fmt.Sprintf("entry %d is not a valid PractitionerRole", e.index), err)
				}
				addRole(r)
				return nil
			}); err != nil {
				return nil, 0, false, err
			}
		}
	}
	recs = make([]agentRecord, 0, len(prs))
	for _, p := range prs {
		recs = append(recs, toAgent(p, roles[p.ID], s.log))
	}
	return recs, matches, true, nil
}

// practitionerExists reads Practitioner/id: nil when it is there,
// ErrAgentNotFound when the server has none (404, 410).
func (s *Scheduler) practitionerExists(ctx context.Context, id string) error {
	resp, body, err := s.do(ctx, http.MethodGet, s.c.http.URL("/Practitioner/"+id, nil), nil, nil)
	if err != nil {
		if gone(resp) {
			return ehr.ErrAgentNotFound
		}
		return err
	}
	if err := checkResourceType(body, "Practitioner"); err != nil {
		return s.badDecode(err)
	}
	return nil
}
