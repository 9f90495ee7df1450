package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
)

func (s *Server) schedulingRoutes(r *mux.Router) {
	agents := func(h actingHandler) http.Handler { return noStore(s.authenticate(s.acting(ehr.UseAgents, h))) }
	appt := func(action audit.Action, use ehr.Use, h actingHandler) http.Handler {
		return noStore(s.audited(action, "appointment", s.acting(use, h)))
	}
	r.Handle("/appointment/customer", appt(audit.AppointmentCreate, ehr.UseBook, s.book)).Methods(http.MethodPost)
	r.Handle("/appointment", appt(audit.AppointmentList, ehr.UseAppointments, s.listAppointments)).Methods(http.MethodGet)
	r.Handle("/appointment/customer/{id}/cancel", appt(audit.AppointmentCancel, ehr.UseChange, s.cancelAppointment)).Methods(http.MethodPut)
	r.Handle("/appointment/{id}/reschedule", appt(audit.AppointmentReschedule, ehr.UseChange, s.rescheduleAppointment)).Methods(http.MethodPost)
	r.Handle("/agents", agents(s.listAgents)).Methods(http.MethodGet)
	r.Handle("/agents/{id}", agents(s.getAgent)).Methods(http.MethodGet)
	r.Handle("/agents/{id}/availability", agents(s.availability)).Methods(http.MethodGet)
}

type appointmentResponse struct {
	ID         string             `json:"id"`
	AgentID    string             `json:"agentId"`
	Start      time.Time          `json:"start"`
	End        time.Time          `json:"end"`
	Status     string             `json:"status"`
	Reason     string             `json:"reason"`
	LocationID *string            `json:"locationId"`
	Patient    patientContactJSON `json:"patient"`
	Source     string             `json:"source"`
	ExternalID string             `json:"externalId"`
	CreatedAt  *time.Time         `json:"createdAt"`
	UpdatedAt  *time.Time         `json:"updatedAt"`
}

func optionalTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func newAppointmentResponse(a ehr.Appointment) appointmentResponse {
	return appointmentResponse{
		ID: a.ID, AgentID: a.AgentID, Start: a.Start, End: a.End, Status: string(a.Status), Reason: a.Reason,
		LocationID: optional(a.LocationID), Patient: newPatientContact(a.Patient), Source: a.Source, ExternalID: a.ExternalID,
		CreatedAt: optionalTime(a.CreatedAt), UpdatedAt: optionalTime(a.UpdatedAt),
	}
}

type agentResponse struct {
	ID          string   `json:"id"`
	FirstName   string   `json:"firstName"`
	LastName    string   `json:"lastName"`
	Name        string   `json:"name"`
	Specialty   string   `json:"specialty"`
	Email       string   `json:"email"`
	Timezone    string   `json:"timezone"`
	LocationIDs []string `json:"locationIds"`
}

func newAgentResponse(a ehr.Agent) agentResponse {
	ids := a.LocationIDs
	if ids == nil {
		ids = []string{}
	}
	return agentResponse{ID: a.ID, FirstName: a.FirstName, LastName: a.LastName, Name: a.Name,
		Specialty: a.Specialty, Email: a.Email, Timezone: a.Timezone, LocationIDs: ids}
}

type pageResponse[T any] struct {
	Items      []T `json:"items"`
	TotalCount int `json:"totalCount"`
	Page       int `json:"page"`
	Limit      int `json:"limit"`
}

func newPage[A, B any](p ehr.Page[A], conv func(A) B) pageResponse[B] {
	out := pageResponse[B]{Items: make([]B, len(p.Items)), TotalCount: p.TotalCount, Page: p.Page, Limit: p.Limit}
	for i, it := range p.Items {
		out.Items[i] = conv(it)
	}
	return out
}

type bookingRequest struct {
	AgentID         string             `json:"agentId"`
	Start           string             `json:"start"`
	End             string             `json:"end"`
	DurationMinutes int                `json:"durationMinutes"`
	Reason          string             `json:"reason"`
	LocationID      string             `json:"locationId"`
	Patient         patientContactJSON `json:"patient"`
}

func (s *Server) book(w http.ResponseWriter, r *http.Request, business string) {
	var req bookingRequest
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.auditStarted(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	b, err := s.scheduling.Book(r.Context(), ehr.BookingRequest{
		Business: business, AgentID: req.AgentID, Start: instant(req.Start), End: instant(req.End), DurationMinutes: req.DurationMinutes,
		Reason: req.Reason, LocationID: req.LocationID, Patient: req.Patient.contact(),
		IdempotencyKey: r.Header.Get("Idempotency-Key"),
	})
	if b.Replayed {
		w.Header().Set("Idempotency-Replayed", "true")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditResource(r.Context(), b.Appointment.ID)
	writeSuccess(w, http.StatusCreated, "Appointment created successfully", newAppointmentResponse(b.Appointment))
}

// instant parses a time of a request body (RFC 3339 with an offset). One
// that does not parse goes to the core as Invalid, not as an early 400: the
// core checks the caller first and reports it with the request's other
// field problems.
func instant(s string) ehr.Instant {
	if s == "" {
		return ehr.Instant{}
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return ehr.Instant{Invalid: true, Raw: s}
	}
	return ehr.Instant{Time: t, Raw: s}
}

// date parses a date parameter (YYYY-MM-DD); one missing or not a date is
// the zero Date, which the core reports after checking the caller.
func date(s string) ehr.Date {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return ehr.Date{}
	}
	return ehr.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}
}

// query reads the listing parameters; a bad number or time is a 400 naming
// the parameter.
type query struct {
	v    url.Values
	errs []string
}

func (q *query) int(name string) int {
	s := q.v.Get(name)
	if s == "" {
		return 0
	}
	n, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange):
		q.errs = append(q.errs, name+" is out of range")
	case err != nil:
		q.errs = append(q.errs, name+" must be a whole number")
	}
	return n
}

// time reads an RFC 3339 time, or a date (its midnight, UTC).
func (q *query) time(name string) time.Time {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t
	}
	q.errs = append(q.errs, name+" must be an RFC 3339 time or a date YYYY-MM-DD")
	return time.Time{}
}

func (q *query) err() error {
	if len(q.errs) == 0 {
		return nil
	}
	return ehr.ErrInvalidAppointment.WithMessage("Validation failed: %s", strings.Join(q.errs, "; "))
}

func (s *Server) listAppointments(w http.ResponseWriter, r *http.Request, business string) {
	q := &query{v: r.URL.Query()}
	f := ehr.AppointmentFilter{
		Business: business, AgentID: q.v.Get("agentId"), Status: ehr.AppointmentStatus(q.v.Get("status")),
		From: q.time("from"), To: q.time("to"), PatientEmail: q.v.Get("patientEmail"),
		Page: q.int("page"), Limit: q.int("limit"),
	}
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.scheduling.Appointments(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	auditDetail(r.Context(), map[string]any{"results": len(p.Items)})
	writeSuccess(w, http.StatusOK, "Appointments fetched successfully", newPage(p, newAppointmentResponse))
}

// appointmentID parses the path's appointment id and names it as the
// request's audited resource.
func appointmentID(r *http.Request) (string, error) {
	id, err := ehr.ParseAppointmentID(mux.Vars(r)["id"])
	if err != nil {
		return "", err
	}
	auditResource(r.Context(), id)
	return id, nil
}

func (s *Server) cancelAppointment(w http.ResponseWriter, r *http.Request, business string) {
	id, err := appointmentID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req struct {
		Reason string `json:"reason"`
	}
	if r.ContentLength != 0 { // the body, and so the reason, is optional
		if err := decodeJSON(w, r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	if err := s.auditStarted(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.scheduling.Cancel(r.Context(), business, id, req.Reason)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Appointment cancelled successfully", newAppointmentResponse(a))
}

func (s *Server) rescheduleAppointment(w http.ResponseWriter, r *http.Request, business string) {
	id, err := appointmentID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var req struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	if err := decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.auditStarted(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.scheduling.Reschedule(r.Context(), ehr.RescheduleRequest{Business: business, ID: id,
		Start: instant(req.Start), End: instant(req.End)})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Appointment rescheduled successfully", newAppointmentResponse(a))
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request, business string) {
	q := &query{v: r.URL.Query()}
	f := ehr.AgentFilter{Business: business, Name: q.v.Get("name"), Specialty: q.v.Get("specialty"), LocationID: q.v.Get("locationId"),
		Page: q.int("page"), Limit: q.int("limit")}
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.scheduling.Agents(r.Context(), f)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Agents fetched successfully", newPage(p, newAgentResponse))
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request, business string) {
	a, err := s.scheduling.Agent(r.Context(), business, mux.Vars(r)["id"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSuccess(w, http.StatusOK, "Agent fetched successfully", newAgentResponse(a))
}

type slotResponse struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

func (s *Server) availability(w http.ResponseWriter, r *http.Request, business string) {
	q := &query{v: r.URL.Query()}
	minutes := q.int("duration")
	if err := q.err(); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.scheduling.Availability(r.Context(), ehr.AvailabilityRequest{Business: business, AgentID: mux.Vars(r)["id"],
		From: date(q.v.Get("from")), To: date(q.v.Get("to")), Minutes: minutes})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	slots := make([]slotResponse, len(a.Slots))
	for i, p := range a.Slots {
		slots[i] = slotResponse{Start: p.Start, End: p.End}
	}
	writeSuccess(w, http.StatusOK, "Agent availability fetched successfully", map[string]any{
		"agentId": a.AgentID, "timezone": a.Timezone, "slots": slots,
	})
}
