package wsbot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// Clinical records: the action records.search.

const actionSearchRecords = "records.search"

// MaxRecords bounds the records one SearchRecords reads: a person with
// more records of the type (in the range) is answered as an error
// (KindBadGateway "ehr_listing_inexact"), never cut short.
const MaxRecords = 10_000

// codeRecordTypeNotSupported is the per-source error of a bot that cannot
// search records (it answers unknown_action): KindBadGateway, so it is a
// failure of that source, unlike ehr.ErrRecordTypeNotSupported (the
// request's 400) which has the same code.
const codeRecordTypeNotSupported = "record_type_not_supported"

type (
	recordsPayload struct {
		PatientID string `json:"patientId"`
		Type      string `json:"type"`
		From      string `json:"from,omitempty"`
		To        string `json:"to,omitempty"`
		Page      int    `json:"page"`
		Limit     int    `json:"limit"`
	}
	wireRecord struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		PatientID string          `json:"patientId"`
		Date      string          `json:"date"`
		Status    string          `json:"status"`
		Code      wireCoding      `json:"code"`
		Text      string          `json:"text"`
		Value     json.RawMessage `json:"value"` // {value, unit}, a string or null
	}
	wireCoding struct {
		System  string `json:"system"`
		Code    string `json:"code"`
		Display string `json:"display"`
	}
	wireQuantity struct {
		Value json.RawMessage `json:"value"` // a JSON number, the decimal as written
		Unit  string          `json:"unit"`
	}
)

// SearchRecords asks records.search for q's person and type, with From
// and To as dates (YYYY-MM-DD) when set, page by page (MaxPageSize a page)
// to the end. More than MaxRecords records is an error, never a cut list;
// so is an item of another type or person than asked, or one whose value
// is neither {value: number, unit}, a string nor null (KindBadGateway
// "ehr_bad_response"). A bot that answers unknown_action cannot search
// records: KindBadGateway "record_type_not_supported". Dates are kept as
// written; the range is not applied again here (the core does it). The
// result is never nil when err is nil.
func (c *Client) SearchRecords(ctx context.Context, q ehr.RecordQuery) ([]ehr.Record, error) {
	p := recordsPayload{PatientID: q.PatientID, Type: string(q.Type), From: formatDay(q.From), To: formatDay(q.To),
		Limit: MaxPageSize}
	out := []ehr.Record{}
	for p.Page = 1; ; p.Page++ {
		var res wireList[wireRecord]
		if err := c.call(ctx, actionSearchRecords, p, &res); err != nil {
			return nil, err
		}
		if res.TotalCount > c.maxRecords || len(out)+len(res.Items) > c.maxRecords {
			return nil, &core.Error{Kind: core.KindBadGateway, Code: "ehr_listing_inexact",
				Message: fmt.Sprintf("%s holds more than %d %s records of the person; narrow the date range",
					c.name, c.maxRecords, q.Type)}
		}
		for _, w := range res.Items {
			r, err := recordFromWire(w, q)
			if err != nil {
				return nil, c.badAnswer(actionSearchRecords, err.Error(), err)
			}
			out = append(out, r)
		}
		size := orDefault(res.Limit, p.Limit)
		if len(res.Items) == 0 || len(res.Items) < size || p.Page*size >= res.TotalCount {
			return out, nil
		}
	}
}

// recordFromWire converts an item of records.search for q. An empty type
// or patientId is q's; another one is an error.
func recordFromWire(w wireRecord, q ehr.RecordQuery) (ehr.Record, error) {
	r := ehr.Record{Type: q.Type, ID: w.ID, PatientID: q.PatientID, Date: w.Date, Status: w.Status,
		Code: ehr.Coding(w.Code), Text: w.Text}
	if w.Type != "" && w.Type != string(q.Type) {
		return ehr.Record{}, errors.New("an item is of another type than asked")
	}
	if w.PatientID != "" && w.PatientID != q.PatientID {
		return ehr.Record{}, errors.New("an item is of another person than asked")
	}
	v, err := recordValueFromWire(w.Value)
	if err != nil {
		return ehr.Record{}, err
	}
	r.Value = v
	return r, nil
}

// recordValueFromWire reads an item's value: {value, unit} for a quantity
// (the decimal kept as written; a quantity without a value is none), a
// string, or null (nil).
func recordValueFromWire(raw json.RawMessage) (*ehr.RecordValue, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, errors.New("an item's value is malformed")
		}
		return &ehr.RecordValue{String: s}, nil
	case '{':
		var q wireQuantity
		if err := json.Unmarshal(raw, &q); err != nil {
			return nil, errors.New("an item's quantity is malformed")
		}
		num := bytes.TrimSpace(q.Value)
		if len(num) == 0 || string(num) == "null" {
			return nil, nil
		}
		if num[0] != '-' && (num[0] < '0' || num[0] > '9') {
			return nil, errors.New("an item's quantity value is not a number")
		}
		return &ehr.RecordValue{Quantity: &ehr.Quantity{Value: string(num), Unit: q.Unit}}, nil
	}
	return nil, errors.New("an item's value is neither a quantity, a string nor null")
}

// formatDay is d as YYYY-MM-DD, "" for the zero Date.
func formatDay(d ehr.Date) string {
	if d.Month == 0 {
		return ""
	}
	return fmt.Sprintf("%04d-%02d-%02d", d.Year, d.Month, d.Day)
}
