package fhir

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

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
func decodeEntry[T any](s *Scheduler, e entry) (T, error) {
	var v T
	if err := json.Unmarshal(e.raw, &v); err != nil {
		return v, s.bad(fmt.Sprintf("entry %d is not a valid %s", e.index, e.typ), err)
	}
	return v, nil
}
