package fhir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// entry is one resource of a search answer; index is its place in the
// page, for messages; date is the server's clock when it answered with it
// (the page's HTTP Date; zero when none).
type entry struct {
	typ, id, mode string
	raw           json.RawMessage
	index         int
	date          time.Time
}

// matched reports whether e is a match of the search (not an include).
func (e entry) matched() bool { return e.mode != "include" }

// entries returns the resource entries of b, OperationOutcome entries
// (and those of search mode outcome) left out.
func (c *Client) entries(b bundle) ([]entry, error) {
	entries := make([]entry, 0, len(b.Entry))
	for i, e := range b.Entry {
		if e.Search.Mode == "outcome" || len(e.Resource) == 0 || string(e.Resource) == "null" {
			continue
		}
		var hdr resourceHeader
		if err := json.Unmarshal(e.Resource, &hdr); err != nil {
			return nil, c.bad(fmt.Sprintf("entry %d is not a FHIR resource", i), err)
		}
		if hdr.ResourceType == "OperationOutcome" {
			continue
		}
		entries = append(entries, entry{typ: hdr.ResourceType, id: hdr.ID, mode: e.Search.Mode, raw: e.Resource, index: i, date: b.date})
	}
	return entries, nil
}

// errNotPaged tells agents that the server did not answer a page search
// as asked (searchPage's ok false).
var errNotPaged = errors.New("the server does not page this search")

// searchFunc runs one search of typ?q (searchAll or a searchPage).
type searchFunc func(typ string, q url.Values, visit func(entry) error) (int, error)

func (s *Scheduler) searchAllFunc(ctx context.Context) searchFunc {
	return func(typ string, q url.Values, visit func(entry) error) (int, error) {
		return s.c.searchAll(ctx, typ, q, visit)
	}
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

// decodeEntry decodes the resource of e (of type e.typ, which the caller
// checked) as a T; a malformed one is an invalid answer of the server.
func decodeEntry[T any](c *Client, e entry) (T, error) {
	var v T
	if err := json.Unmarshal(e.raw, &v); err != nil {
		return v, c.bad(fmt.Sprintf("entry %d is not a valid %s", e.index, e.typ), err)
	}
	return v, nil
}
