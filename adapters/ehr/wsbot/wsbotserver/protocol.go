package wsbotserver

import (
	"encoding/json"
	"fmt"
)

// The frames.
type (
	request struct {
		ID      string          `json:"id"`
		Type    string          `json:"type"`
		Action  string          `json:"action"`
		Payload json.RawMessage `json:"payload"`
	}
	response struct {
		ID     string      `json:"id"`
		Type   string      `json:"type"`
		OK     bool        `json:"ok"`
		Result any         `json:"result,omitempty"`
		Error  *protoError `json:"error,omitempty"`
	}
	protoError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

func fail(code, format string, args ...any) *protoError {
	return &protoError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// The payloads and results.
type (
	agentJSON struct {
		ID          string   `json:"id"`
		FirstName   string   `json:"firstName"`
		LastName    string   `json:"lastName"`
		Name        string   `json:"name"`
		Specialty   string   `json:"specialty"`
		Email       string   `json:"email"`
		Timezone    string   `json:"timezone"`
		LocationIDs []string `json:"locationIds"`
	}
	patientContact struct {
		FirstName   string `json:"firstName"`
		LastName    string `json:"lastName"`
		DateOfBirth string `json:"dateOfBirth"`
		Email       string `json:"email"`
		Phone       string `json:"phone"`
	}
	appointmentJSON struct {
		ID         string         `json:"id"`
		AgentID    string         `json:"agentId"`
		Start      string         `json:"start"`
		End        string         `json:"end"`
		Status     string         `json:"status"`
		Reason     string         `json:"reason"`
		LocationID string         `json:"locationId"`
		Patient    patientContact `json:"patient"`
		Source     string         `json:"source"`
		ExternalID string         `json:"externalId"`
		CreatedAt  string         `json:"createdAt"`
		UpdatedAt  string         `json:"updatedAt"`
	}
	slotJSON struct {
		Start string `json:"start"`
		End   string `json:"end"`
	}
	availabilityJSON struct {
		AgentID  string     `json:"agentId"`
		Timezone string     `json:"timezone"`
		Slots    []slotJSON `json:"slots"`
	}
	patientJSON struct {
		ID          string           `json:"id"`
		Name        nameJSON         `json:"name"`
		BirthDate   string           `json:"birthDate"`
		Gender      string           `json:"gender"`
		Identifiers []identifierJSON `json:"identifiers"`
		Telecom     []telecomJSON    `json:"telecom"`
		Address     []addressJSON    `json:"address"`
		LastUpdated string           `json:"lastUpdated,omitempty"`
	}
	nameJSON struct {
		Family string   `json:"family"`
		Given  []string `json:"given"`
		Text   string   `json:"text"`
	}
	identifierJSON struct {
		System string `json:"system"`
		Value  string `json:"value"`
		Type   string `json:"type"`
	}
	telecomJSON struct {
		System string `json:"system"`
		Value  string `json:"value"`
		Use    string `json:"use"`
	}
	addressJSON struct {
		Line       []string `json:"line"`
		City       string   `json:"city"`
		State      string   `json:"state"`
		PostalCode string   `json:"postalCode"`
		Country    string   `json:"country"`
	}
	listJSON[T any] struct {
		Items      []T `json:"items"`
		TotalCount int `json:"totalCount"`
		Page       int `json:"page"`
		Limit      int `json:"limit"`
	}
	// paging is the page and limit of a list payload.
	paging struct {
		Page  int `json:"page"`
		Limit int `json:"limit"`
	}
)

// Source is the source the bot writes on its appointments.
const Source = "wsbottest"

// actions are the handlers of the bot's actions.
var actions = map[string]func(*Server, json.RawMessage) (any, *protoError){
	"agents.list":             (*Server).listAgents,
	"agents.get":              (*Server).getAgent,
	"agents.availability":     (*Server).availability,
	"appointments.create":     (*Server).create,
	"appointments.list":       (*Server).listAppointments,
	"appointments.get":        (*Server).getAppointment,
	"appointments.cancel":     (*Server).cancel,
	"appointments.reschedule": (*Server).reschedule,
	"patients.search":         (*Server).searchPatients,
	actionSearchRecords:       (*Server).searchRecords,
	actionChanges:             (*Server).changes,
}

func (s *Server) handle(action string, payload json.RawMessage) (any, *protoError) {
	h, ok := actions[action]
	if !ok || action == actionSearchRecords && s.noRecords || action == actionChanges && s.noChanges {
		return nil, fail(CodeUnknownAction, "unknown action %q", action)
	}
	if e := s.refusal(action); e != nil {
		return nil, e
	}
	return h(s, payload)
}

func decode(payload json.RawMessage, v any) *protoError {
	if len(payload) == 0 || string(payload) == "null" {
		payload = json.RawMessage("{}")
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fail(CodeInvalid, "malformed payload: %v", err)
	}
	return nil
}

// decodeList decodes the payload of a list action and resolves its page
// and limit.
func decodeList[P interface {
	resolve() (int, int, *protoError)
}](payload json.RawMessage) (p P, page, limit int, e *protoError) {
	if e = decode(payload, &p); e != nil {
		return p, 0, 0, e
	}
	page, limit, e = p.resolve()
	return p, page, limit, e
}

func (p paging) resolve() (page, limit int, e *protoError) {
	page, limit = p.Page, p.Limit
	if page < 0 || limit < 0 {
		return 0, 0, fail(CodeInvalid, "page and limit must not be negative")
	}
	if page == 0 {
		page = 1
	}
	if limit == 0 {
		limit = defaultLimit
	}
	return page, min(limit, maxLimit), nil
}

func pageOf[T any](all []T, page, limit int) listJSON[T] {
	from := min((page-1)*limit, len(all))
	to := min(from+limit, len(all))
	items := all[from:to]
	if items == nil {
		items = []T{}
	}
	return listJSON[T]{Items: items, TotalCount: len(all), Page: page, Limit: limit}
}
