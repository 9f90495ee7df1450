package fhir

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

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
	q, ok := appointmentQuery(f)
	if !ok {
		return paginate[ehr.Appointment](nil, page, limit), nil
	}
	email := strings.TrimSpace(f.PatientEmail)
	var (
		items   []ehr.Appointment
		dropped bool
	)
	visit := func(e entry) error {
		if e.typ != "Appointment" || !e.matched() {
			return nil
		}
		ap, err := decodeEntry[appointment](s.c, e)
		if err != nil {
			return err
		}
		a := toAppointment(ap, s.c.http.Name(), s.log)
		if !appointmentMatches(f, email, ap, a) {
			dropped = true
			return nil
		}
		if f.AgentID != "" {
			a.AgentID = f.AgentID // the one asked for, should there be two
		}
		items = append(items, a)
		return nil
	}
	if email == "" && f.Status != ehr.StatusPending {
		total, ok, _, err := s.c.searchPage(ctx, "Appointment", q, (page-1)*limit, limit, visit)
		if err != nil {
			return ehr.Page[ehr.Appointment]{}, err
		}
		if ok && !dropped {
			return ehr.Page[ehr.Appointment]{Items: append([]ehr.Appointment{}, items...), TotalCount: total, Page: page, Limit: limit}, nil
		}
		items = nil
	}
	q.Set("_count", strconv.Itoa(MaxPageSize))
	if _, err := s.c.searchAll(ctx, "Appointment", q, visit); err != nil {
		return ehr.Page[ehr.Appointment]{}, err
	}
	return paginate(items, page, limit), nil
}

// appointmentQuery is the Appointment search of f's server-side filters;
// ok is false when no appointment can match f (an agent id that is no
// FHIR id, a status no FHIR code maps to).
func appointmentQuery(f ehr.AppointmentFilter) (q url.Values, ok bool) {
	q = url.Values{}
	if f.AgentID != "" {
		if !validID(f.AgentID) {
			return nil, false
		}
		q.Set("actor", "Practitioner/"+f.AgentID)
	}
	if f.Status != "" {
		codes := fhirStatusCodes(f.Status)
		if len(codes) == 0 {
			return nil, false
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
	return q, true
}

// appointmentMatches reports whether ap, read as a, passes the filters of
// f (email is f.PatientEmail trimmed).
func appointmentMatches(f ehr.AppointmentFilter, email string, ap appointment, a ehr.Appointment) bool {
	switch {
	case !validID(ap.ID):
	case f.AgentID != "" && !holdsAgent(ap, f.AgentID):
	case f.Status != "" && a.Status != f.Status:
	case !f.From.IsZero() && (a.Start.IsZero() || a.Start.Before(f.From)):
	case !f.To.IsZero() && (a.Start.IsZero() || !a.Start.Before(f.To)):
	case email != "" && !strings.EqualFold(a.Patient.Email, email):
	default:
		return true
	}
	return false
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
	resp, out, err := s.c.do(ctx, http.MethodPost, s.c.http.URL("/Appointment", nil), body, map[string]string{
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
		return ehr.Appointment{}, s.c.bad(fmt.Sprintf("it answered the booking with Appointment %s, which is not the one sent", clipN(created.ID, 64)), nil)
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
	_, err := s.c.searchAll(ctx, "Appointment", q, func(e entry) error {
		if e.typ != "Appointment" || !e.matched() {
			return nil
		}
		ap, err := decodeEntry[appointment](s.c, e)
		if err != nil {
			return err
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
			return appointment{}, s.c.bad("the Appointment is malformed", err)
		}
		if ap.ID = strings.TrimSpace(ap.ID); validID(ap.ID) {
			return ap, nil
		}
	}
	if !validID(id) {
		return appointment{}, s.c.bad("it holds no Appointment and no Location of one", nil)
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
		resp, out, err := s.c.do(ctx, http.MethodPut, s.c.http.URL("/Appointment/"+id, nil), body, hdr)
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
	resp, body, err := s.c.do(ctx, http.MethodGet, s.c.http.URL("/Appointment/"+id, nil), nil, nil)
	if err != nil {
		if gone(resp) {
			return nil, appointment{}, "", ehr.ErrAppointmentNotFound
		}
		return nil, appointment{}, "", err
	}
	if err := checkResourceType(body, "Appointment"); err != nil {
		return nil, appointment{}, "", s.c.badDecode(err)
	}
	var (
		ap  appointment
		raw map[string]json.RawMessage
	)
	if err := json.Unmarshal(body, &ap); err != nil {
		return nil, appointment{}, "", s.c.bad("the Appointment is malformed", err)
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, appointment{}, "", s.c.bad("the Appointment is malformed", err)
	}
	if ap.ID = strings.TrimSpace(ap.ID); ap.ID == "" {
		ap.ID = id
	} else if ap.ID != id {
		return nil, appointment{}, "", s.c.bad(fmt.Sprintf("it is Appointment %s, not %s", clipN(ap.ID, 64), id), nil)
	}
	etag := strings.TrimSpace(resp.Header.Get("ETag"))
	if ap.Meta != nil && validID(ap.Meta.VersionID) {
		etag = `W/"` + ap.Meta.VersionID + `"`
	}
	return raw, ap, etag, nil
}
