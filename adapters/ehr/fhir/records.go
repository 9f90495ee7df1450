package fhir

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// codeRecordTypeNotSupported is the per-source error of a server that
// cannot search a record type (it answers 400 or 404 to the search): a
// failure of that source only, unlike ehr.ErrRecordTypeNotSupported (the
// client's bad request).
const codeRecordTypeNotSupported = "record_type_not_supported"

// SearchRecords reads every record of type q.Type of the person
// q.PatientID: GET <Type>?patient=…&_count=MaxPageSize, with the type's
// date parameter only where it covers the clinical date (recordDateParam)
// and q.From or q.To is set, one day wider each side (the server compares
// instants in its own zone; the core filters by the day as written). The
// pages are followed to the end by searchAll, as the scheduler's listings
// are: more than MaxScan records, or more than 500 pages, is an
// ehr_listing_inexact error, never a cut answer. A 400 or 404 to the first page is record_type_not_supported
// (KindBadGateway); a resource that does not convert, ehr_bad_response.
// Each page's resources are converted while the next page is asked for
// (searchAll asks ahead), so the conversion is not on the path of every
// page; a resource that does not convert stops the walk, and its error
// wins over any failure of a later page. The result is never nil when err
// is nil.
func (c *Client) SearchRecords(ctx context.Context, q ehr.RecordQuery) ([]ehr.Record, error) {
	if !slices.Contains(ehr.ClinicalTypes, q.Type) {
		return nil, fmt.Errorf("fhir: %q is not a clinical record type", clipN(string(q.Type), 64))
	}
	if q.PatientID == "" {
		return nil, errors.New("fhir: a record search needs a patient id")
	}
	typ := string(q.Type)
	out := []ehr.Record{}
	read := false // a page was read: a later failure is not about the type
	status, err := c.searchAll(ctx, typ, recordParams(q, MaxPageSize), func(e entry) error {
		read = true
		if !e.matched() || e.typ != typ {
			return nil
		}
		r, err := convertTyped(q.Type, e.raw) // e.typ is typ: its header is decoded
		if err != nil {
			return c.badEntry(e, err)
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		if !read && (status == http.StatusBadRequest || status == http.StatusNotFound) {
			return nil, &core.Error{Kind: core.KindBadGateway, Code: codeRecordTypeNotSupported,
				Message: fmt.Sprintf("%s cannot search %s records", c.http.Name(), typ), Err: err}
		}
		return nil, err
	}
	return out, nil
}

// badEntry is the ehr_bad_response of entry e, which did not convert.
func (c *Client) badEntry(e entry, err error) error {
	msg := fmt.Sprintf("entry %d is not a valid %s", e.index, e.typ)
	var de *decodeError
	if errors.As(err, &de) {
		msg = fmt.Sprintf("entry %d: %s", e.index, de.msg)
	}
	return c.bad(msg, err)
}

// recordParams is the search of q's records, count a page.
func recordParams(q ehr.RecordQuery, count int) url.Values {
	v := url.Values{}
	v.Set("patient", q.PatientID)
	if param, covers := recordDateParam(q.Type); covers {
		if q.From != (ehr.Date{}) {
			v.Add(param, "ge"+dayOf(q.From, -1))
		}
		if q.To != (ehr.Date{}) {
			v.Add(param, "le"+dayOf(q.To, 1))
		}
	}
	v.Set("_count", strconv.Itoa(count))
	return v
}

// dayOf writes the day d plus days as a FHIR date.
func dayOf(d ehr.Date, days int) string {
	return time.Date(d.Year, d.Month, d.Day+days, 0, 0, 0, 0, time.UTC).Format(time.DateOnly)
}
