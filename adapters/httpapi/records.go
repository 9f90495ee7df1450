package httpapi

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The wire shape of a record search's result item (the contract's
// "Clinical records"). As for a person, an optional top-level string the
// EHR left empty (personId, date, status, text) is null, while the
// fields of a nested object (code, a quantity's unit, an attachment's
// contentType and title) are strings, "" when unknown.

// recordResponse is one result item of a record search: one record, held
// by one EHR or several.
type recordResponse struct {
	ID          string            `json:"id"`
	RecordType  string            `json:"recordType"`
	Source      string            `json:"source"`
	Sources     []recordSourceRef `json:"sources"`
	PersonID    *string           `json:"personId"`
	Date        *string           `json:"date"`
	Status      *string           `json:"status"`
	Code        codingJSON        `json:"code"`
	Text        *string           `json:"text"`
	Value       any               `json:"value"` // nil, a string or a quantityJSON
	Attachment  attachmentField   `json:"attachment,omitzero"`
	LastUpdated *time.Time        `json:"lastUpdated"`
}

// recordSourceRef names one EHR's copy of a merged record.
type recordSourceRef struct {
	Source    string `json:"source"`
	RecordID  string `json:"recordId"`
	PatientID string `json:"patientId"`
}

// codingJSON is a record's main code.
type codingJSON struct {
	System  string `json:"system"`
	Code    string `json:"code"`
	Display string `json:"display"`
}

// quantityJSON is an Observation's quantity. Value is the decimal as the
// EHR wrote it: a JSON number with the same digits ("5.40" stays 5.40),
// or a string when what the EHR wrote is no JSON number.
type quantityJSON struct {
	Value any    `json:"value"` // json.Number or string
	Unit  string `json:"unit"`
}

// attachmentJSON describes a document — never its content or URL.
type attachmentJSON struct {
	ContentType string `json:"contentType"`
	Title       string `json:"title"`
	Size        *int64 `json:"size"`
}

// attachmentField is an item's attachment: left out of the items of other
// types than document_reference (the zero value), null on a document
// whose EHR described none.
type attachmentField struct {
	document bool
	value    *attachmentJSON
}

// IsZero reports whether the field is left out (not a document).
func (f attachmentField) IsZero() bool { return !f.document }

// MarshalJSON writes the attachment, or null.
func (f attachmentField) MarshalJSON() ([]byte, error) { return json.Marshal(f.value) }

func newRecordResponse(it ehr.RecordItem) recordResponse {
	r := recordResponse{
		ID: it.ID, RecordType: it.Type.Snake(), Sources: convertAll(it.Sources, newRecordSourceRef),
		PersonID: optional(it.PersonID), Date: optional(it.Date), Status: optional(it.Status),
		Code: codingJSON(it.Code), Text: optional(it.Text), LastUpdated: optionalUTC(it.LastUpdated),
	}
	if len(it.Sources) > 0 {
		r.Source = it.Sources[0].Source
	}
	if it.Type == ehr.TypeObservation {
		r.Value = newRecordValue(it.Value)
	}
	if it.Type == ehr.TypeDocumentReference {
		r.Attachment = attachmentField{document: true, value: newAttachment(it.Attachment)}
	}
	return r
}

func newRecordSourceRef(s ehr.RecordSource) recordSourceRef {
	return recordSourceRef{Source: s.Source, RecordID: s.RecordID, PatientID: s.PatientID}
}

// newRecordValue is an Observation's value: a quantity, else its string,
// else nil (null).
func newRecordValue(v *ehr.RecordValue) any {
	switch {
	case v == nil:
		return nil
	case v.Quantity != nil:
		q := quantityJSON{Value: v.Quantity.Value, Unit: v.Quantity.Unit}
		if isJSONNumber(v.Quantity.Value) {
			q.Value = json.Number(v.Quantity.Value)
		}
		return q
	case v.String != "":
		return v.String
	}
	return nil
}

// isJSONNumber reports whether s is exactly one JSON number, with nothing
// around it: valid JSON that starts as a number starts ('-' or a digit) is
// a number, and a number ends with a digit (no trailing space).
func isJSONNumber(s string) bool {
	return s != "" && strings.IndexByte("-0123456789", s[0]) >= 0 &&
		s[len(s)-1] >= '0' && s[len(s)-1] <= '9' && json.Valid([]byte(s))
}

func newAttachment(a *ehr.Attachment) *attachmentJSON {
	if a == nil {
		return nil
	}
	return &attachmentJSON{ContentType: a.ContentType, Title: a.Title, Size: a.Size}
}

// optionalUTC is t in UTC, or nil (null) when zero.
func optionalUTC(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
