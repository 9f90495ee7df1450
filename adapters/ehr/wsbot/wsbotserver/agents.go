package wsbotserver

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func toAgentJSON(a ehr.Agent) agentJSON {
	loc := a.LocationIDs
	if loc == nil {
		loc = []string{}
	}
	return agentJSON{ID: a.ID, FirstName: a.FirstName, LastName: a.LastName, Name: a.Name,
		Specialty: a.Specialty, Email: a.Email, Timezone: a.Timezone, LocationIDs: loc}
}

func (s *Server) listAgents(payload json.RawMessage) (any, *protoError) {
	p, page, limit, e := decodeList[agentQuery](payload)
	if e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []agentJSON
	for _, id := range s.order {
		a := s.agents[id].a
		if p.Name != "" && !strings.Contains(strings.ToLower(a.Name), strings.ToLower(p.Name)) {
			continue
		}
		if p.Specialty != "" && !strings.EqualFold(a.Specialty, p.Specialty) {
			continue
		}
		if p.LocationID != "" && !slices.Contains(a.LocationIDs, p.LocationID) {
			continue
		}
		all = append(all, toAgentJSON(a))
	}
	return pageOf(all, page, limit), nil
}

type idPayload struct {
	ID string `json:"id"`
}

func (s *Server) getAgent(payload json.RawMessage) (any, *protoError) {
	var p idPayload
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.ID == "" {
		return nil, fail(CodeInvalid, "id is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.ID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.ID)
	}
	return toAgentJSON(a.a), nil
}

// parseInstant reads an RFC 3339 time, or a date (its midnight in loc;
// with end set, the midnight after it, so the date is inclusive).
func parseInstant(s string, loc *time.Location, end bool) (time.Time, error) {
	if t, err := time.ParseInLocation(time.DateOnly, s, loc); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func (s *Server) availability(payload json.RawMessage) (any, *protoError) {
	var p struct {
		AgentID  string `json:"agentId"`
		From     string `json:"from"`
		To       string `json:"to"`
		Duration int    `json:"duration"`
	}
	if e := decode(payload, &p); e != nil {
		return nil, e
	}
	if p.AgentID == "" {
		return nil, fail(CodeInvalid, "agentId is required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.agents[p.AgentID]
	if !ok {
		return nil, fail(CodeNotFound, "no agent %q", p.AgentID)
	}
	loc, err := time.LoadLocation(a.a.Timezone)
	if err != nil {
		loc = time.UTC
	}
	from, err1 := parseInstant(p.From, loc, false)
	to, err2 := parseInstant(p.To, loc, true)
	if err1 != nil || err2 != nil || !to.After(from) || p.Duration < 0 {
		return nil, fail(CodeInvalid, "from and to must be times or dates with from before to, duration not negative")
	}
	free := s.freeLocked(a, from, to, "")
	slots := []slotJSON{}
	for _, f := range free {
		if p.Duration <= 0 {
			slots = append(slots, slotJSON{f.Start.Format(time.RFC3339), f.End.Format(time.RFC3339)})
			continue
		}
		d := time.Duration(p.Duration) * time.Minute
		for t := f.Start; !t.Add(d).After(f.End); t = t.Add(d) {
			slots = append(slots, slotJSON{t.Format(time.RFC3339), t.Add(d).Format(time.RFC3339)})
		}
	}
	return availabilityJSON{AgentID: a.a.ID, Timezone: a.a.Timezone, Slots: slots}, nil
}

// freeLocked is a's free time in [from, to) less the appointments that
// block it (but the one called except), sorted.
func (s *Server) freeLocked(a *agent, from, to time.Time, except string) []ehr.Period {
	free := ehr.ClipPeriods(a.free, from, to)
	for _, ap := range s.appts {
		if ap.agentID != a.a.ID || ap.id == except || !blocks(ap.status) {
			continue
		}
		var next []ehr.Period
		for _, f := range free {
			if !ap.start.Before(f.End) || !ap.end.After(f.Start) {
				next = append(next, f)
				continue
			}
			if ap.start.After(f.Start) {
				next = append(next, ehr.Period{Start: f.Start, End: ap.start})
			}
			if ap.end.Before(f.End) {
				next = append(next, ehr.Period{Start: ap.end, End: f.End})
			}
		}
		free = next
	}
	slices.SortFunc(free, func(x, y ehr.Period) int { return x.Start.Compare(y.Start) })
	return free
}

func blocks(status string) bool { return status != "cancelled" && status != "no_show" }

// fitsLocked reports whether [start, end) lies in one free span of a.
func (s *Server) fitsLocked(a *agent, start, end time.Time, except string) bool {
	for _, f := range s.freeLocked(a, start, end, except) {
		if !f.Start.After(start) && !f.End.Before(end) {
			return true
		}
	}
	return false
}

// agentQuery is the payload of agents.list.
type agentQuery struct {
	Name       string `json:"name"`
	Specialty  string `json:"specialty"`
	LocationID string `json:"locationId"`
	paging
}
