package postgres

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"time"

	"github.com/carebridge/carebridge/core/audit"
)

// The audit trail's hash chain, computed by the store (AuditTrail), which
// owns its format: the core's audit.Event carries no encoding. Each event's Hash is SHA-256(previous event's Hash ||
// canonical(event)), the first event's previous hash being genesis. Changing,
// removing or reordering a stored event breaks every link after it, which a
// verifier finds by recomputing the chain.

// genesis returns the hash before the first event: 32 zero bytes.
func genesis() []byte { return make([]byte, sha256.Size) }

// canonicalForm fixes the order of the keys of the canonical form
// (encoding/json writes struct fields in declaration order). It is the chain's format, not
// a wire shape: changing it invalidates every stored hash.
// The detail, already canonical JSON, is appended as the last key.
type canonicalForm struct {
	ID           int64  `json:"id"`
	At           string `json:"at"`
	RequestID    string `json:"requestId"`
	Actor        string `json:"actor"`
	Action       string `json:"action"`
	ResourceType string `json:"resourceType"`
	ResourceID   string `json:"resourceId"`
	BusinessID   string `json:"businessId,omitempty"` // absent when "": see canonical
	Outcome      string `json:"outcome"`
	Status       int    `json:"status"`
}

// canonical is the content of e that its hash covers: JSON with the keys id,
// at, requestId, actor, action, resourceType, resourceId, businessId, outcome,
// status, detail, in that order. businessId is there only when the event has
// a business, so the events written before events had one keep their form
// and hash. At is taken in UTC, truncated to the microsecond
// (what a PostgreSQL timestamptz keeps) and written as RFC 3339 with up to
// nine fractional digits; Detail is canonicalDetail's form. An event whose
// Detail cannot be encoded has detail null here: stores refuse such events
// (they call canonicalDetail first), so no stored event hashes that way.
func canonical(e audit.Event) []byte {
	detail, err := canonicalDetail(e.Detail)
	if err != nil {
		detail = []byte("null")
	}
	return canonicalWith(e, detail)
}

// canonicalWith is canonical with the detail's canonical form given.
func canonicalWith(e audit.Event, detail []byte) []byte {
	b, err := json.Marshal(canonicalForm{
		ID:           e.ID,
		At:           canonicalTime(e.At).Format(time.RFC3339Nano),
		RequestID:    e.RequestID,
		Actor:        e.Actor,
		Action:       string(e.Action),
		ResourceType: e.ResourceType,
		ResourceID:   e.ResourceID,
		BusinessID:   e.BusinessID,
		Outcome:      string(e.Outcome),
		Status:       e.Status,
	})
	if err != nil {
		// Every field is a string or a number: unreachable.
		panic("audit: canonical form: " + err.Error())
	}
	b = append(b[:len(b)-1], `,"detail":`...) // b ends with the object's }
	b = append(b, detail...)
	return append(b, '}')
}

// canonicalTime is t as the chain and the store keep it: UTC, truncated to
// the microsecond.
func canonicalTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// canonicalDetail is the canonical JSON of a detail: {} for nil, otherwise
// the value after a round trip through JSON (numbers become float64, so int
// 3 and float64 3 both give 3; map keys are sorted). A detail read back
// from a PostgreSQL jsonb column into a map[string]any therefore gives the
// same bytes as the one written. It fails when the detail does not encode as
// JSON (a channel, a NaN) or holds a NUL character, which jsonb refuses.
func canonicalDetail(d map[string]any) ([]byte, error) {
	if len(d) == 0 {
		return []byte("{}"), nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// encoding/json writes a NUL in a string as \u0000. The text \u0000
	// after an escaped backslash is refused too: harmless in a detail.
	if bytes.Contains(b, []byte(`\u0000`)) {
		return nil, errors.New("audit detail holds a NUL character")
	}
	return b, nil
}

// link is the hash of e chained after an event whose hash is prev:
// SHA-256(prev || canonical(e)).
func link(prev []byte, e audit.Event) []byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(canonical(e))
	return h.Sum(nil)
}

// linkDetail is link for a writer that has already made detail, the
// canonicalDetail of e.Detail: it spares the JSON round trip on the
// writer's one goroutine.
func linkDetail(prev []byte, e audit.Event, detail []byte) []byte {
	h := sha256.New()
	h.Write(prev)
	h.Write(canonicalWith(e, detail))
	return h.Sum(nil)
}

// verifier checks a chain one event at a time, in id order, so a store can
// stream its events through it. The zero value is ready to use.
//
// The rule: firstBad is the position where the chain stops checking out,
// always the id after the last good event. An event is good when its ID is
// the last good ID + 1 (starting at 1) and its Hash is link(previous hash,
// event). Hence an altered event n gives n; a missing event n (a gap) gives
// n; a swapped pair n, n+1 gives n. When every event is good, Head compares
// the chain head kept beside the events (the last event's id and hash, as
// the writer saw it) with the last event: a head past the last event
// (events deleted at the end) or with another hash gives last id + 1; a
// head before the last event (events appended without moving the head)
// gives head id + 1.
type verifier struct {
	prev     []byte // hash of the last good event; nil before the first
	last     int64  // id of the last good event
	events   int
	firstBad int64
}

// Next checks the next event in id order and reports whether the chain
// still checks out. After the first bad event it only counts events.
func (v *verifier) Next(e audit.Event) bool {
	v.events++
	if v.firstBad != 0 {
		return false
	}
	prev := v.prev
	if prev == nil {
		prev = genesis()
	}
	if e.ID != v.last+1 || !bytes.Equal(e.Hash, link(prev, e)) {
		v.firstBad = v.last + 1
		return false
	}
	v.prev, v.last = e.Hash, e.ID
	return true
}

// Head checks, after the last event, the chain head stored beside the
// events, and reports whether the whole chain checks out.
func (v *verifier) Head(id int64, hash []byte) bool {
	if v.firstBad != 0 {
		return false
	}
	prev := v.prev
	if prev == nil {
		prev = genesis()
	}
	switch {
	case id >= 0 && id < v.last:
		v.firstBad = id + 1
	case id != v.last || !bytes.Equal(hash, prev):
		v.firstBad = v.last + 1
	}
	return v.firstBad == 0
}

// Events is the number of events given to Next.
func (v *verifier) Events() int { return v.events }

// FirstBad is the id where the chain stops checking out (see verifier), 0
// while it checks out.
func (v *verifier) FirstBad() int64 { return v.firstBad }

// OK reports whether every event so far, and the head if given, checked out.
func (v *verifier) OK() bool { return v.firstBad == 0 }
