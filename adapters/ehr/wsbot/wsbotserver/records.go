package wsbotserver

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// actionSearchRecords is the clinical records action (see WithoutRecords).
const actionSearchRecords = "records.search"

// WithoutRecords makes the bot one of the contract's older bots: it
// answers records.search with unknown_action.
func WithoutRecords() Option { return func(s *Server) { s.noRecords = true } }

// AddRecord stores r (under r.ID, or a new id when it is empty) for
// records.search and returns its id. r.LastUpdated and r.Attachment are
// not kept: a bot record carries neither. A quantity whose value is not a
// JSON number is sent as a JSON string, which the contract does not allow:
// a malformed answer, for tests.
func (s *Server) AddRecord(r ehr.Record) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.ID == "" {
		s.seq++
		r.ID = fmt.Sprintf("record-%d", s.seq)
	}
	if s.records == nil {
		s.records = make(map[string][]recordJSON)
	}
	s.records[r.PatientID] = append(s.records[r.PatientID], toRecordJSON(r))
	return r.ID
}

func (s *Server) searchRecords(payload json.RawMessage) (any, *protoError) {
	p, page, limit, e := decodeList[recordQuery](payload)
	if e != nil {
		return nil, e
	}
	if p.PatientID == "" {
		return nil, fail(CodeInvalid, "patientId is required")
	}
	if !slices.Contains(ehr.ClinicalTypes, ehr.ClinicalType(p.Type)) {
		return nil, fail(CodeInvalid, "type must be one of the nine FHIR record types")
	}
	from, ok := parseDay(p.From)
	if !ok {
		return nil, fail(CodeInvalid, "from must be a date (YYYY-MM-DD)")
	}
	to, ok := parseDay(p.To)
	if !ok {
		return nil, fail(CodeInvalid, "to must be a date (YYYY-MM-DD)")
	}
	s.mu.Lock()
	var all []recordJSON
	for _, r := range s.records[p.PatientID] {
		if r.Type == p.Type && ehr.InDateRange(r.Date, from, to) {
			all = append(all, r)
		}
	}
	s.mu.Unlock()
	// Newest first by the date as written, compared as text (undated
	// last), then by id.
	slices.SortStableFunc(all, func(a, b recordJSON) int {
		return cmp.Or(cmp.Compare(b.Date, a.Date), cmp.Compare(a.ID, b.ID))
	})
	return pageOf(all, page, limit), nil
}

// parseDay reads an optional YYYY-MM-DD date ("" is none: the zero Date).
func parseDay(s string) (ehr.Date, bool) {
	if s == "" {
		return ehr.Date{}, true
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return ehr.Date{}, false
	}
	return ehr.Date{Year: t.Year(), Month: t.Month(), Day: t.Day()}, true
}

// toRecordJSON is r in the bot's wire shape: a quantity's value is sent
// as a JSON number, the decimal as written (see AddRecord for one that is
// not a number).
func toRecordJSON(r ehr.Record) recordJSON {
	out := recordJSON{
		ID: r.ID, Type: string(r.Type), PatientID: r.PatientID, Date: r.Date, Status: r.Status,
		Code: codingJSON{System: r.Code.System, Code: r.Code.Code, Display: r.Code.Display},
		Text: r.Text,
	}
	switch v := r.Value; {
	case v == nil:
	case v.Quantity != nil:
		var num any = v.Quantity.Value
		if isJSONNumber(v.Quantity.Value) {
			num = json.RawMessage(v.Quantity.Value)
		}
		out.Value = quantityJSON{Value: num, Unit: v.Quantity.Unit}
	default:
		out.Value = v.String
	}
	return out
}

// isJSONNumber reports whether s is one JSON number.
func isJSONNumber(s string) bool {
	if s == "" || s[0] != '-' && (s[0] < '0' || s[0] > '9') {
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) == nil
}

type (
	// recordQuery is the payload of records.search.
	recordQuery struct {
		PatientID string `json:"patientId"`
		Type      string `json:"type"`
		From      string `json:"from"`
		To        string `json:"to"`
		paging
	}
	recordJSON struct {
		ID        string     `json:"id"`
		Type      string     `json:"type"`
		PatientID string     `json:"patientId"`
		Date      string     `json:"date"`
		Status    string     `json:"status"`
		Code      codingJSON `json:"code"`
		Text      string     `json:"text"`
		Value     any        `json:"value"` // quantityJSON, a string or nil
	}
	codingJSON struct {
		System  string `json:"system"`
		Code    string `json:"code"`
		Display string `json:"display"`
	}
	quantityJSON struct {
		Value any    `json:"value"` // json.RawMessage (a number) or a string
		Unit  string `json:"unit"`
	}
)
