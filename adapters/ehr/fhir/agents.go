package fhir

import (
	"context"
	"errors"
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
			t, ok, status, err := s.c.searchPage(ctx, typ, q, (page-1)*limit, limit, visit)
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
	var found *agentSearch
	search := func() (int, error) {
		found = &agentSearch{seen: map[string]bool{}, roles: map[string][]practitionerRole{}, seenRole: map[string]bool{}}
		if s.noRevinclude.Load() {
			q.Del("_revinclude")
		} else {
			q.Set("_revinclude", "PractitionerRole:practitioner")
		}
		return searchPr("Practitioner", q, func(e entry) error { return found.visit(s, e) })
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
	prs := slices.DeleteFunc(found.prs, func(p practitioner) bool { return (p.Active != nil && !*p.Active) || !validID(p.ID) })
	if !found.gotRoles && len(prs) > 0 {
		if err := s.searchRoles(ctx, prs, found); err != nil {
			return nil, 0, false, err
		}
	}
	recs = make([]agentRecord, 0, len(prs))
	for _, p := range prs {
		recs = append(recs, toAgent(p, found.roles[p.ID], s.log))
	}
	return recs, found.matches, true, nil
}

// agentSearch gathers the Practitioners of one search, each once, and the
// PractitionerRoles by the id of their practitioner.
type agentSearch struct {
	prs      []practitioner
	seen     map[string]bool
	roles    map[string][]practitionerRole
	seenRole map[string]bool
	gotRoles bool // a role came with the Practitioners
	matches  int  // Practitioners the server matched
}

// visit takes one entry of a Practitioner search.
func (a *agentSearch) visit(s *Scheduler, e entry) error {
	switch e.typ {
	case "Practitioner":
		if !e.matched() {
			return nil
		}
		p, err := decodeEntry[practitioner](s.c, e)
		if err != nil {
			return err
		}
		a.matches++
		if p.ID = strings.TrimSpace(p.ID); p.ID != "" && !a.seen[p.ID] {
			a.seen[p.ID] = true
			a.prs = append(a.prs, p)
		}
	case "PractitionerRole":
		r, err := decodeEntry[practitionerRole](s.c, e)
		if err != nil {
			return err
		}
		a.gotRoles = true
		a.addRole(r)
	}
	return nil
}

func (a *agentSearch) addRole(r practitionerRole) {
	if a.seenRole[r.ID] && r.ID != "" {
		return
	}
	a.seenRole[r.ID] = true
	if typ, pid, ok := splitReference(r.Practitioner.Reference); ok && typ == "Practitioner" {
		a.roles[pid] = append(a.roles[pid], r)
	}
}

// searchRoles adds the PractitionerRoles of prs to found, from
// PractitionerRole searches by practitioner.
func (s *Scheduler) searchRoles(ctx context.Context, prs []practitioner, found *agentSearch) error {
	for chunk := range slices.Chunk(prs, refChunk) {
		refs := make([]string, len(chunk))
		for i, p := range chunk {
			refs[i] = "Practitioner/" + p.ID
		}
		rq := url.Values{"practitioner": {strings.Join(refs, ",")}, "_count": {strconv.Itoa(MaxPageSize)}}
		if _, err := s.c.searchAll(ctx, "PractitionerRole", rq, func(e entry) error {
			if e.typ != "PractitionerRole" {
				return nil
			}
			r, err := decodeEntry[practitionerRole](s.c, e)
			if err != nil {
				return err
			}
			found.addRole(r)
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// practitionerExists reads Practitioner/id: nil when it is there,
// ErrAgentNotFound when the server has none (404, 410).
func (s *Scheduler) practitionerExists(ctx context.Context, id string) error {
	resp, body, err := s.c.do(ctx, http.MethodGet, s.c.http.URL("/Practitioner/"+id, nil), nil, nil)
	if err != nil {
		if gone(resp) {
			return ehr.ErrAgentNotFound
		}
		return err
	}
	if err := checkResourceType(body, "Practitioner"); err != nil {
		return s.c.badDecode(err)
	}
	return nil
}
