package fhir

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// Bounds of the scheduler.
const (
	// MaxSlotLength is how far before the start of a FreePeriods range
	// the scheduler looks for free Slots and booked Appointments that
	// began earlier and still run into it (Slot and Appointment can only be
	// searched by their start). A longer slot or appointment that began
	// before the range is not seen.
	MaxSlotLength = 24 * time.Hour
	// refChunk is how many references go into one comma-separated search
	// value (a PractitionerRole or Slot search for many practitioners or
	// schedules is split into several).
	refChunk = 40
)

// Scheduler is the FHIR R4 adapter of the appointment and agent endpoints
// (ehr.Scheduler). It shares the Doer — and so authentication, retries,
// rate limit and circuit breaker — and the error mapping and body bounds
// of the patient search (Client).
//
// Agents are Practitioners, with their PractitionerRoles for specialty and
// locations. Free time is the Slots (status free) of the practitioner's
// Schedules, merged, less the Appointments that hold the practitioner.
// Appointments are Appointment resources whose patient is contained in
// them. Listings ask the server for the page wanted and take totalCount
// from Bundle.total; when the server cannot answer a listing that way
// (a filter it cannot apply or ignores, no total), they read every match,
// at most MaxScan, and filter and page in the adapter. A listing is exact
// or an upstream error, never cut short.
type Scheduler struct {
	c   *Client
	log *slog.Logger
	now func() time.Time
	// noRevinclude is set once the server refused _revinclude: roles then
	// come from a second search.
	noRevinclude atomic.Bool
}

var _ ehr.Scheduler = (*Scheduler)(nil)

// SchedulerOption adjusts a Scheduler.
type SchedulerOption func(*Scheduler)

// WithLogger sets the logger of the scheduler's warnings (unknown statuses
// and time zones, cut listings); nil discards them. Nothing about a
// patient is logged.
func WithLogger(l *slog.Logger) SchedulerOption {
	return func(s *Scheduler) { s.log = l }
}

// NewScheduler returns a Scheduler that sends its requests through doer.
func NewScheduler(doer Doer, opts ...SchedulerOption) *Scheduler {
	s := &Scheduler{c: New(doer, ""), now: time.Now}
	for _, o := range opts {
		o(s)
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

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

// errNotPaged tells agents that the server did not answer a page search
// as asked (searchPage's ok false).
var errNotPaged = errors.New("the server does not page this search")

// searchFunc runs one search of typ?q (searchAll or a searchPage).
type searchFunc func(typ string, q url.Values, visit func(entry) error) (int, error)

func (s *Scheduler) searchAllFunc(ctx context.Context) searchFunc {
	return func(typ string, q url.Values, visit func(entry) error) (int, error) {
		return s.searchAll(ctx, typ, q, visit)
	}
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

// FreePeriods returns the agent's free time in [from, to): the free Slots
// of the practitioner's active Schedules (Schedule?actor=Practitioner/id),
// merged where they touch or overlap, less every Appointment of the
// practitioner (Appointment?actor=…) that holds its time — all but
// cancelled, entered-in-error and noshow ones, and those the practitioner
// declined — clipped to [from, to). Slots and appointments that began up
// to MaxSlotLength before from count. A practitioner without a schedule
// is never free; one that does not exist is ErrAgentNotFound.
func (s *Scheduler) FreePeriods(ctx context.Context, agentID string, from, to time.Time) ([]ehr.Period, error) {
	if !validID(agentID) {
		return nil, ehr.ErrAgentNotFound
	}
	actor := "Practitioner/" + agentID
	var schedules []string
	if _, err := s.searchAll(ctx, "Schedule", url.Values{"actor": {actor}, "_count": {strconv.Itoa(MaxPageSize)}}, func(e entry) error {
		if e.typ != "Schedule" || e.mode == "include" {
			return nil
		}
		var sc schedule
		if err := json.Unmarshal(e.raw, &sc); err != nil {
			return s.bad(fmt.Sprintf("entry %d is not a valid Schedule", e.index), err)
		}
		if (sc.Active == nil || *sc.Active) && validID(sc.ID) && hasReference(sc.Actor, "Practitioner", agentID) &&
			!slices.Contains(schedules, sc.ID) {
			schedules = append(schedules, sc.ID)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	if len(schedules) == 0 {
		if err := s.practitionerExists(ctx, agentID); err != nil {
			return nil, err
		}
		return []ehr.Period{}, nil
	}
	if !to.After(from) {
		return []ehr.Period{}, nil
	}
	lookback := from.Add(-MaxSlotLength)

	var free []ehr.Period
	for chunk := range slices.Chunk(schedules, refChunk) {
		refs := make([]string, len(chunk))
		for i, id := range chunk {
			refs[i] = "Schedule/" + id
		}
		q := url.Values{
			"schedule": {strings.Join(refs, ",")},
			"start":    {"ge" + searchTime(lookback, false), "lt" + searchTime(to, true)},
			"status":   {"free"},
			"_count":   {strconv.Itoa(MaxPageSize)},
		}
		if _, err := s.searchAll(ctx, "Slot", q, func(e entry) error {
			if e.typ != "Slot" || e.mode == "include" {
				return nil
			}
			var sl slot
			if err := json.Unmarshal(e.raw, &sl); err != nil {
				return s.bad(fmt.Sprintf("entry %d is not a valid Slot", e.index), err)
			}
			typ, sid, ok := splitReference(sl.Schedule.Reference)
			if sl.Status != "free" || !ok || typ != "Schedule" || !slices.Contains(chunk, sid) {
				return nil
			}
			if p, ok := period(sl.Start, sl.End); ok && p.End.After(from) && p.Start.Before(to) {
				free = append(free, p)
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	free = ehr.MergePeriods(free)
	if len(free) == 0 {
		return []ehr.Period{}, nil
	}

	var busy []ehr.Period
	q := url.Values{
		"actor":  {actor},
		"date":   {"ge" + searchTime(lookback, false), "lt" + searchTime(to, true)},
		"_count": {strconv.Itoa(MaxPageSize)},
	}
	if _, err := s.searchAll(ctx, "Appointment", q, func(e entry) error {
		if e.typ != "Appointment" || e.mode == "include" {
			return nil
		}
		var ap appointment
		if err := json.Unmarshal(e.raw, &ap); err != nil {
			return s.bad(fmt.Sprintf("entry %d is not a valid Appointment", e.index), err)
		}
		if !holdsTime(ap.Status) || !holdsAgent(ap, agentID) {
			return nil
		}
		if p, ok := period(ap.Start, ap.End); ok && p.End.After(from) && p.Start.Before(to) {
			busy = append(busy, p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return clipPeriods(subtractPeriods(free, ehr.MergePeriods(busy)), from, to), nil
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

// holdsAgent reports whether the practitioner agentID takes part in ap
// (and did not decline).
func holdsAgent(ap appointment, agentID string) bool {
	for _, p := range ap.Participant {
		if p.Actor == nil || p.Status == "declined" {
			continue
		}
		if typ, id, ok := splitReference(p.Actor.Reference); ok && typ == "Practitioner" && id == agentID {
			return true
		}
	}
	return false
}

func hasReference(refs []reference, typ, id string) bool {
	for _, r := range refs {
		if t, i, ok := splitReference(r.Reference); ok && t == typ && i == id {
			return true
		}
	}
	return false
}

// ListAppointments lists appointments, in the server's order. The
// filters go to the server (actor=Practitioner/…, status as a comma list
// of the FHIR codes that map to the internal status, date=ge/lt) and are
// checked again here; the patient's e-mail (of the contained Patient) is
// matched here only, ignoring case, and so is status pending (an unknown
// FHIR status reads as pending, and no code finds it on the server).
//
// Without e-mail or pending, the server pages: one search for the page
// asked (_count, _offset, _total=accurate) and totalCount is its
// Bundle.total. When the server does not page that way, or the page holds
// an appointment the check here drops (the server ignored a filter), and
// with e-mail or pending, every match is read (at most MaxScan) and
// filtered and paged here. A listing is exact or an error.
func (s *Scheduler) ListAppointments(ctx context.Context, f ehr.AppointmentFilter) (ehr.Page[ehr.Appointment], error) {
	page, limit := pageBounds(f.Page, f.Limit)
	q := url.Values{}
	if f.AgentID != "" {
		if !validID(f.AgentID) {
			return paginate[ehr.Appointment](nil, page, limit), nil
		}
		q.Set("actor", "Practitioner/"+f.AgentID)
	}
	if f.Status != "" {
		codes := fhirStatusCodes(f.Status)
		if len(codes) == 0 {
			return paginate[ehr.Appointment](nil, page, limit), nil
		}
		// Pending is also what an unknown code reads as: those are only
		// found by filtering here.
		if f.Status != ehr.StatusPending {
			q.Set("status", strings.Join(codes, ","))
		}
	}
	if !f.From.IsZero() {
		q.Add("date", "ge"+searchTime(f.From, false))
	}
	if !f.To.IsZero() {
		q.Add("date", "lt"+searchTime(f.To, true))
	}
	email := strings.TrimSpace(f.PatientEmail)
	var (
		items   []ehr.Appointment
		dropped bool
	)
	visit := func(e entry) error {
		if e.typ != "Appointment" || e.mode == "include" {
			return nil
		}
		var ap appointment
		if err := json.Unmarshal(e.raw, &ap); err != nil {
			return s.bad(fmt.Sprintf("entry %d is not a valid Appointment", e.index), err)
		}
		a := toAppointment(ap, s.c.http.Name(), s.log)
		switch {
		case !validID(ap.ID):
		case f.AgentID != "" && !holdsAgent(ap, f.AgentID):
		case f.Status != "" && a.Status != f.Status:
		case !f.From.IsZero() && (a.Start.IsZero() || a.Start.Before(f.From)):
		case !f.To.IsZero() && (a.Start.IsZero() || !a.Start.Before(f.To)):
		case email != "" && !strings.EqualFold(a.Patient.Email, email):
		default:
			if f.AgentID != "" {
				a.AgentID = f.AgentID // the one asked for, should there be two
			}
			items = append(items, a)
			return nil
		}
		dropped = true
		return nil
	}
	if email == "" && f.Status != ehr.StatusPending {
		total, ok, _, err := s.searchPage(ctx, "Appointment", q, (page-1)*limit, limit, visit)
		if err != nil {
			return ehr.Page[ehr.Appointment]{}, err
		}
		if ok && !dropped {
			return ehr.Page[ehr.Appointment]{Items: append([]ehr.Appointment{}, items...), TotalCount: total, Page: page, Limit: limit}, nil
		}
		items = nil
	}
	q.Set("_count", strconv.Itoa(MaxPageSize))
	if _, err := s.searchAll(ctx, "Appointment", q, visit); err != nil {
		return ehr.Page[ehr.Appointment]{}, err
	}
	return paginate(items, page, limit), nil
}

// GetAppointment reads Appointment/id.
func (s *Scheduler) GetAppointment(ctx context.Context, id string) (ehr.Appointment, error) {
	if !validID(id) {
		return ehr.Appointment{}, ehr.ErrAppointmentNotFound
	}
	_, ap, _, err := s.readAppointment(ctx, id)
	if err != nil {
		return ehr.Appointment{}, err
	}
	return toAppointment(ap, s.c.http.Name(), s.log), nil
}

// CreateAppointment POSTs a booked Appointment: the practitioner, the
// location and the contained patient as participants, the reason as its
// description, created set to now (unless a.CreatedAt is set). The create
// is conditional (If-None-Exist on a fresh identifier of
// IdentifierSystem that the Appointment carries), so when the HTTP client
// retries a POST whose answer was lost, the server finds the first one
// instead of booking twice — on servers that support conditional create;
// one that ignores the header may book twice then. A 409 answer is
// ErrAgentUnavailable. The scheduler does not check the agent's calendar:
// the core does, under its lock.
func (s *Scheduler) CreateAppointment(ctx context.Context, a ehr.Appointment) (ehr.Appointment, error) {
	if !validID(a.AgentID) {
		return ehr.Appointment{}, ehr.ErrAgentNotFound
	}
	if a.LocationID != "" && !validID(a.LocationID) {
		return ehr.Appointment{}, ehr.ErrInvalidAppointment.WithMessage(
			"Validation failed: locationId must be a FHIR id (letters, digits, '-' and '.', at most 64)")
	}
	if a.Start.IsZero() || !a.End.After(a.Start) {
		return ehr.Appointment{}, ehr.ErrInvalidAppointment.WithMessage("Validation failed: end must be after start")
	}
	a.Status = ehr.StatusBooked
	a.ID, a.ExternalID, a.UpdatedAt = "", "", time.Time{}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = s.now().UTC().Truncate(time.Millisecond)
	}
	ref := a.Ref
	if ref == "" {
		ref = core.NewUUID()
	}
	ap := fhirAppointment(a, s.log)
	token := refToken(ref)
	ap.Identifier = []plainIdentifier{{System: IdentifierSystem, Value: token}}
	body, err := json.Marshal(ap)
	if err != nil {
		return ehr.Appointment{}, fmt.Errorf("encode appointment: %w", err)
	}
	resp, out, err := s.do(ctx, http.MethodPost, s.c.http.URL("/Appointment", nil), body, map[string]string{
		"If-None-Exist": url.Values{"identifier": {IdentifierSystem + "|" + token}}.Encode(),
		"Prefer":        "return=representation",
	})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusConflict {
			return ehr.Appointment{}, ehr.ErrAgentUnavailable.Wrap(err)
		}
		return ehr.Appointment{}, err
	}
	id := ""
	if _, rid, ok := splitReference(resp.Header.Get("Location")); ok {
		id = rid
	}
	created, err := s.answered(ctx, id, out)
	if err != nil {
		return ehr.Appointment{}, err
	}
	// A server that matched If-None-Exist against the wrong search answers
	// with some other appointment: refuse it rather than report it booked.
	if !slices.Contains(created.Identifier, plainIdentifier{System: IdentifierSystem, Value: token}) {
		return ehr.Appointment{}, s.bad(fmt.Sprintf("it answered the booking with Appointment %s, which is not the one sent", clipN(created.ID, 64)), nil)
	}
	return toAppointment(created, s.c.http.Name(), s.log), nil
}

// refToken is the identifier value of the booking reference ref.
func refToken(ref string) string { return "urn:uuid:" + ref }

// FindAppointment searches the Appointment that carries the identifier of
// ref.Ref; several of them (a server that ignored the conditional create)
// are answered with the first.
func (s *Scheduler) FindAppointment(ctx context.Context, ref ehr.Appointment) (ehr.Appointment, bool, error) {
	if ref.Ref == "" {
		return ehr.Appointment{}, false, nil
	}
	want := plainIdentifier{System: IdentifierSystem, Value: refToken(ref.Ref)}
	q := url.Values{"identifier": {want.System + "|" + want.Value}}
	var found []appointment
	_, err := s.searchAll(ctx, "Appointment", q, func(e entry) error {
		if e.typ != "Appointment" || !e.matched() {
			return nil
		}
		var ap appointment
		if err := json.Unmarshal(e.raw, &ap); err != nil {
			return s.bad(fmt.Sprintf("entry %d is not a valid Appointment", e.index), err)
		}
		// A server that ignores the identifier parameter answers with
		// others: only the one that carries it counts.
		if validID(ap.ID) && slices.Contains(ap.Identifier, want) {
			found = append(found, ap)
		}
		return nil
	})
	if err != nil || len(found) == 0 {
		return ehr.Appointment{}, false, err
	}
	return toAppointment(found[0], s.c.http.Name(), s.log), true, nil
}

// answered decodes the Appointment a write answered with; when the body
// holds none (a server that prefers return=minimal), it reads
// Appointment/id.
func (s *Scheduler) answered(ctx context.Context, id string, body []byte) (appointment, error) {
	if len(bytes.TrimSpace(body)) > 0 && checkResourceType(body, "Appointment") == nil {
		var ap appointment
		if err := json.Unmarshal(body, &ap); err != nil {
			return appointment{}, s.bad("the Appointment is malformed", err)
		}
		if ap.ID = strings.TrimSpace(ap.ID); validID(ap.ID) {
			return ap, nil
		}
	}
	if !validID(id) {
		return appointment{}, s.bad("it holds no Appointment and no Location of one", nil)
	}
	_, ap, _, err := s.readAppointment(ctx, id)
	return ap, err
}

// CancelAppointment sets the status of Appointment id to cancelled, with
// reason as its cancelationReason text. A cancelled appointment is
// ErrAlreadyCancelled.
func (s *Scheduler) CancelAppointment(ctx context.Context, id, reason string) (ehr.Appointment, error) {
	reason = strings.TrimSpace(reason)
	return s.update(ctx, id, func(cur appointment, raw map[string]json.RawMessage, again bool) (bool, error) {
		if isCancelled(cur.Status) {
			if again {
				return false, nil // our first write went through after all, or another's did
			}
			return false, ehr.ErrAlreadyCancelled.WithMessage("Appointment %s is already cancelled", id)
		}
		raw["status"] = jsonString("cancelled")
		if reason != "" {
			cr, _ := json.Marshal(concept{Text: reason})
			raw["cancelationReason"] = cr
		} else {
			delete(raw, "cancelationReason")
		}
		return true, nil
	})
}

// RescheduleAppointment moves Appointment id to [start, end); its status
// stays. A cancelled appointment is ErrAlreadyCancelled. The scheduler
// does not check the agent's calendar: the core does, under its lock.
func (s *Scheduler) RescheduleAppointment(ctx context.Context, id string, start, end time.Time) (ehr.Appointment, error) {
	if start.IsZero() || !end.After(start) {
		return ehr.Appointment{}, ehr.ErrInvalidAppointment.WithMessage("Validation failed: end must be after start")
	}
	return s.update(ctx, id, func(cur appointment, raw map[string]json.RawMessage, again bool) (bool, error) {
		if isCancelled(cur.Status) {
			return false, ehr.ErrAlreadyCancelled.WithMessage("Appointment %s is cancelled and cannot be rescheduled", id)
		}
		if again && instant(cur.Start).Equal(start) && instant(cur.End).Equal(end) {
			return false, nil
		}
		raw["start"] = jsonString(formatInstant(start))
		raw["end"] = jsonString(formatInstant(end))
		return true, nil
	})
}

func isCancelled(code string) bool {
	return fromFHIRStatus[strings.ToLower(strings.TrimSpace(code))] == ehr.StatusCancelled
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// update reads Appointment id, lets change edit the resource as read
// (raw: its elements, so that those the scheduler does not model are
// written back untouched) and PUTs it with If-Match on the version read.
// When the server answers 412 or 409 — the appointment changed since it
// was read — it reads and changes once more (again is then true); a second
// refusal is a conflict. change returns false when the appointment as read
// needs no write.
func (s *Scheduler) update(ctx context.Context, id string,
	change func(cur appointment, raw map[string]json.RawMessage, again bool) (bool, error)) (ehr.Appointment, error) {
	if !validID(id) {
		return ehr.Appointment{}, ehr.ErrAppointmentNotFound
	}
	for attempt := 0; ; attempt++ {
		raw, cur, etag, err := s.readAppointment(ctx, id)
		if err != nil {
			return ehr.Appointment{}, err
		}
		write, err := change(cur, raw, attempt > 0)
		if err != nil {
			return ehr.Appointment{}, err
		}
		if !write {
			return toAppointment(cur, s.c.http.Name(), s.log), nil
		}
		raw["resourceType"], raw["id"] = jsonString("Appointment"), jsonString(id)
		body, err := json.Marshal(raw)
		if err != nil {
			return ehr.Appointment{}, fmt.Errorf("encode appointment %s: %w", id, err)
		}
		hdr := map[string]string{"Prefer": "return=representation"}
		if etag != "" {
			hdr["If-Match"] = etag
		}
		resp, out, err := s.do(ctx, http.MethodPut, s.c.http.URL("/Appointment/"+id, nil), body, hdr)
		if err != nil {
			switch {
			case gone(resp):
				return ehr.Appointment{}, ehr.ErrAppointmentNotFound
			case resp != nil && (resp.StatusCode == http.StatusPreconditionFailed || resp.StatusCode == http.StatusConflict):
				if attempt == 0 {
					continue
				}
				return ehr.Appointment{}, &core.Error{Kind: core.KindConflict, Code: "ehr_conflict",
					Message: fmt.Sprintf("%s changed appointment %s while it was being updated; try again", s.c.http.Name(), id),
					Err:     err}
			}
			return ehr.Appointment{}, err
		}
		ap, err := s.answered(ctx, id, out)
		if err != nil {
			return ehr.Appointment{}, err
		}
		return toAppointment(ap, s.c.http.Name(), s.log), nil
	}
}

// readAppointment GETs Appointment/id and returns it twice — as its
// elements and decoded — with the version to send in If-Match (W/"n"
// from meta.versionId, else the answer's ETag; "" when neither).
func (s *Scheduler) readAppointment(ctx context.Context, id string) (map[string]json.RawMessage, appointment, string, error) {
	resp, body, err := s.do(ctx, http.MethodGet, s.c.http.URL("/Appointment/"+id, nil), nil, nil)
	if err != nil {
		if gone(resp) {
			return nil, appointment{}, "", ehr.ErrAppointmentNotFound
		}
		return nil, appointment{}, "", err
	}
	if err := checkResourceType(body, "Appointment"); err != nil {
		return nil, appointment{}, "", s.badDecode(err)
	}
	var (
		ap  appointment
		raw map[string]json.RawMessage
	)
	if err := json.Unmarshal(body, &ap); err != nil {
		return nil, appointment{}, "", s.bad("the Appointment is malformed", err)
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, appointment{}, "", s.bad("the Appointment is malformed", err)
	}
	if ap.ID = strings.TrimSpace(ap.ID); ap.ID == "" {
		ap.ID = id
	} else if ap.ID != id {
		return nil, appointment{}, "", s.bad(fmt.Sprintf("it is Appointment %s, not %s", clipN(ap.ID, 64), id), nil)
	}
	etag := strings.TrimSpace(resp.Header.Get("ETag"))
	if ap.Meta != nil && validID(ap.Meta.VersionID) {
		etag = `W/"` + ap.Meta.VersionID + `"`
	}
	return raw, ap, etag, nil
}

// do sends one request (with body as application/fhir+json when not nil,
// replayable by the Doer's retries) and returns the answer as exchange
// does: on a non-2xx status a *core.Error with resp to look at.
func (s *Scheduler) do(ctx context.Context, method, target string, body []byte, hdr map[string]string) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, nil, s.c.upstream("ehr_error", "has an invalid URL", err)
	}
	req.Header.Set("Accept", contentType)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, out, err := s.c.exchange(ctx, req)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			return nil, nil, s.bad(de.msg, de.err)
		}
		return resp, nil, err
	}
	return resp, out, nil
}

func gone(resp *http.Response) bool {
	return resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone)
}

func (s *Scheduler) bad(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: s.c.http.Name() + " sent an invalid answer: " + what, Err: cause}
}

func (s *Scheduler) badDecode(err error) *core.Error {
	var de *decodeError
	if errors.As(err, &de) {
		return s.bad(de.msg, de.err)
	}
	return s.bad("it could not be decoded", err)
}

// period reads a start and an end instant; ok when both parse and end is
// after start.
func period(start, end string) (ehr.Period, bool) {
	p := ehr.Period{Start: instant(start), End: instant(end)}
	return p, !p.Start.IsZero() && !p.End.IsZero() && p.End.After(p.Start)
}

// subtractPeriods removes busy from free; both are sorted and merged.
func subtractPeriods(free, busy []ehr.Period) []ehr.Period {
	var out []ehr.Period
	for _, f := range free {
		cur := f
		for _, b := range busy {
			if !b.End.After(cur.Start) {
				continue
			}
			if !b.Start.Before(cur.End) {
				break
			}
			if b.Start.After(cur.Start) {
				out = append(out, ehr.Period{Start: cur.Start, End: b.Start})
			}
			cur.Start = b.End
			if !cur.End.After(cur.Start) {
				break
			}
		}
		if cur.End.After(cur.Start) {
			out = append(out, cur)
		}
	}
	return out
}

// clipPeriods cuts sorted periods to [from, to); the result is never nil.
func clipPeriods(ps []ehr.Period, from, to time.Time) []ehr.Period {
	out := []ehr.Period{}
	for _, p := range ps {
		if p.Start.Before(from) {
			p.Start = from
		}
		if p.End.After(to) {
			p.End = to
		}
		if p.End.After(p.Start) {
			out = append(out, p)
		}
	}
	return out
}

// searchTime writes t as a FHIR search dateTime in UTC to the second,
// rounded down (or up, for an exclusive upper bound): the adapter clips
// exactly.
func searchTime(t time.Time, up bool) string {
	r := t.UTC().Truncate(time.Second)
	if up && r.Before(t) {
		r = r.Add(time.Second)
	}
	return r.Format("2006-01-02T15:04:05Z")
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
