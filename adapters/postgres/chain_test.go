package postgres

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/audit"
)

var chainT0 = time.Date(2025, 3, 1, 9, 30, 0, 123456789, time.UTC)

// linkedEvents returns n linked events with ids 1..n.
func linkedEvents(n int) []audit.Event {
	events := make([]audit.Event, n)
	prev := genesis()
	for i := range events {
		e := audit.Event{
			ID:           int64(i + 1),
			At:           chainT0.Add(time.Duration(i) * time.Second),
			RequestID:    "req-" + string(rune('a'+i)),
			Actor:        "alice",
			Action:       audit.PatientSearch,
			ResourceType: "patient",
			ResourceID:   "",
			Outcome:      audit.Success,
			Status:       200,
			Detail:       map[string]any{"results": i, "sources": []string{"epic"}, "cacheHit": i%2 == 0},
		}
		e.Hash = link(prev, e)
		prev = e.Hash
		events[i] = e
	}
	return events
}

// verifyEvents runs events through a Verifier and then checks the head.
func verifyEvents(events []audit.Event, headID int64, headHash []byte) (n int, firstBad int64, ok bool) {
	var v verifier
	for _, e := range events {
		v.Next(e)
	}
	ok = v.Head(headID, headHash)
	if ok != v.OK() {
		panic("Head and OK disagree")
	}
	return v.Events(), v.FirstBad(), ok
}

func TestCanonical_KeyOrderAndForm(t *testing.T) {
	e := audit.Event{ID: 7, At: time.Date(2025, 3, 1, 10, 30, 0, 123456789, time.FixedZone("CET", 3600)),
		RequestID: "r1", Actor: "bob", Action: audit.BlobDownload, ResourceType: "blob", ResourceID: "42",
		Outcome: audit.Denied, Status: 403, Detail: map[string]any{"b": 1, "a": "x"},
		Hash: []byte("ignored")}
	want := `{"id":7,"at":"2025-03-01T09:30:00.123456Z","requestId":"r1","actor":"bob","action":"blob.download",` +
		`"resourceType":"blob","resourceId":"42","outcome":"denied","status":403,"detail":{"a":"x","b":1}}`
	if got := string(canonical(e)); got != want {
		t.Fatalf("canonical:\n got %s\nwant %s", got, want)
	}
}

func TestCanonical_SameContentSameBytes(t *testing.T) {
	base := audit.Event{ID: 1, At: chainT0, Action: audit.AppointmentList, Outcome: audit.Success, Status: 200}
	tests := []struct {
		name string
		a, b func(*audit.Event)
	}{
		{"nil and empty detail",
			func(e *audit.Event) { e.Detail = nil },
			func(e *audit.Event) { e.Detail = map[string]any{} }},
		{"int and float64 numbers (jsonb gives float64)",
			func(e *audit.Event) { e.Detail = map[string]any{"results": 3, "n": int64(1 << 40)} },
			func(e *audit.Event) { e.Detail = map[string]any{"results": 3.0, "n": float64(1 << 40)} }},
		{"typed slices and []any",
			func(e *audit.Event) { e.Detail = map[string]any{"sources": []string{"epic", "cerner"}} },
			func(e *audit.Event) { e.Detail = map[string]any{"sources": []any{"epic", "cerner"}} }},
		{"nanoseconds below the microsecond (timestamptz keeps µs)",
			func(e *audit.Event) { e.At = chainT0.Truncate(time.Microsecond) },
			func(e *audit.Event) { e.At = chainT0.Truncate(time.Microsecond).Add(999) }},
		{"the same instant in another zone",
			func(e *audit.Event) { e.At = chainT0 },
			func(e *audit.Event) { e.At = chainT0.In(time.FixedZone("X", -5*3600)) }},
		{"the hash is not content",
			func(e *audit.Event) { e.Hash = nil },
			func(e *audit.Event) { e.Hash = []byte{1, 2, 3} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := base, base
			tt.a(&a)
			tt.b(&b)
			if ca, cb := canonical(a), canonical(b); !bytes.Equal(ca, cb) {
				t.Fatalf("differ:\n%s\n%s", ca, cb)
			}
		})
	}
}

// A detail as PostgreSQL returns it: jsonb normalises the text (key order,
// spacing, 3.0 vs 3) and the driver decodes it into map[string]any.
func TestLink_DetailRoundTripThroughJSONBKeepsTheHash(t *testing.T) {
	e := linkedEvents(1)[0]
	e.Detail = map[string]any{"results": 12, "sources": []string{"epic", "wsbot"}, "cacheHit": true,
		"nested": map[string]any{"z": 1.5, "a": []int{1, 2}}, "note": "<&> é"}
	stored := link(genesis(), e)

	for _, fromDB := range []string{
		`{"note": "<&> é", "nested": {"a": [1, 2], "z": 1.5}, "results": 12, "sources": ["epic", "wsbot"], "cacheHit": true}`,
		`{"cacheHit":true,"nested":{"z":1.50,"a":[1.0,2]},"note":"\u003c\u0026\u003e \u00e9","results":12.0,"sources":["epic","wsbot"]}`,
	} {
		var d map[string]any
		if err := json.Unmarshal([]byte(fromDB), &d); err != nil {
			t.Fatal(err)
		}
		back := e
		back.Detail = d
		if got := link(genesis(), back); !bytes.Equal(got, stored) {
			t.Fatalf("hash changed after the round trip %s", fromDB)
		}
	}
}

func TestCanonicalDetail_RefusesWhatJSONBCannotKeep(t *testing.T) {
	for name, d := range map[string]map[string]any{
		"NUL":     {"x": "a\x00b"},
		"channel": {"x": make(chan int)},
	} {
		if _, err := canonicalDetail(d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestLink_FirstEventChainsFromGenesis(t *testing.T) {
	g := genesis()
	if len(g) != 32 || !bytes.Equal(g, make([]byte, 32)) {
		t.Fatalf("genesis %x", g)
	}
	g[0] = 1 // a caller cannot change the next one
	if genesis()[0] != 0 {
		t.Fatal("Genesis is shared")
	}
	e := linkedEvents(1)[0]
	if bytes.Equal(link(genesis(), e), link(g, e)) {
		t.Fatal("prev is not hashed")
	}
}

func TestVerifier_GoodChain(t *testing.T) {
	events := linkedEvents(5)
	n, bad, ok := verifyEvents(events, 5, events[4].Hash)
	if !ok || n != 5 || bad != 0 {
		t.Fatalf("n=%d firstBad=%d ok=%v", n, bad, ok)
	}
	// No events: the head is still the seed.
	if n, bad, ok := verifyEvents(nil, 0, genesis()); !ok || n != 0 || bad != 0 {
		t.Fatalf("empty: n=%d firstBad=%d ok=%v", n, bad, ok)
	}
}

func TestVerifier_AlteredFieldIsFound(t *testing.T) {
	alter := map[string]func(*audit.Event){
		"id":           func(e *audit.Event) { e.ID = 30 },
		"at":           func(e *audit.Event) { e.At = e.At.Add(time.Microsecond) },
		"requestId":    func(e *audit.Event) { e.RequestID += "x" },
		"actor":        func(e *audit.Event) { e.Actor = "mallory" },
		"empty actor":  func(e *audit.Event) { e.Actor = "" },
		"action":       func(e *audit.Event) { e.Action = audit.BlobDelete },
		"resourceType": func(e *audit.Event) { e.ResourceType = "blob" },
		"resourceId":   func(e *audit.Event) { e.ResourceID = "9" },
		"businessId":   func(e *audit.Event) { e.BusinessID = "0b0e6f3c-5a1d-4c2e-9f00-3d8e1a2b4c5d" },
		"outcome":      func(e *audit.Event) { e.Outcome = audit.Denied },
		"status":       func(e *audit.Event) { e.Status = 404 },
		"detail value": func(e *audit.Event) {
			e.Detail = map[string]any{"results": 0, "sources": []string{"epic"}, "cacheHit": false}
		},
		"detail key": func(e *audit.Event) { e.Detail["extra"] = 1 },
		"detail nil": func(e *audit.Event) { e.Detail = nil },
		"hash":       func(e *audit.Event) { e.Hash = bytes.Clone(e.Hash); e.Hash[0] ^= 1 },
	}
	for name, f := range alter {
		t.Run(name, func(t *testing.T) {
			events := linkedEvents(5)
			f(&events[2]) // event 3
			n, bad, ok := verifyEvents(events, 5, events[4].Hash)
			if ok || n != 5 || bad != 3 {
				t.Fatalf("n=%d firstBad=%d ok=%v, want 5 3 false", n, bad, ok)
			}
		})
	}
}

func TestVerifier_BrokenOrderIsFound(t *testing.T) {
	events := linkedEvents(6)
	head, headHash := int64(6), events[5].Hash
	tests := []struct {
		name     string
		events   []audit.Event
		headID   int64
		headHash []byte
		wantN    int
		wantBad  int64
	}{
		{"a gap", append(append([]audit.Event{}, events[:3]...), events[4:]...), head, headHash, 5, 4},
		{"a swapped pair", []audit.Event{events[0], events[2], events[1], events[3], events[4], events[5]}, head, headHash, 6, 2},
		// Swapped contents under the original ids, as an UPDATE of two rows would leave them.
		{"swapped contents", swapContents(events, 1, 2), head, headHash, 6, 2},
		{"the first missing", events[1:], head, headHash, 5, 1},
		{"a deleted tail", events[:4], head, headHash, 4, 5},
		{"every event deleted", nil, head, headHash, 0, 1},
		{"a head with another hash", events, head, events[4].Hash, 6, 7},
		{"a head behind the events", events, 4, events[3].Hash, 6, 5},
		{"a head id past the events", events, 7, headHash, 6, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, bad, ok := verifyEvents(tt.events, tt.headID, tt.headHash)
			if ok || n != tt.wantN || bad != tt.wantBad {
				t.Fatalf("n=%d firstBad=%d ok=%v, want %d %d false", n, bad, ok, tt.wantN, tt.wantBad)
			}
		})
	}
}

// swapContents returns a copy of events where positions i and j keep their
// ids but carry each other's content and hash.
func swapContents(events []audit.Event, i, j int) []audit.Event {
	out := append([]audit.Event{}, events...)
	out[i], out[j] = out[j], out[i]
	out[i].ID, out[j].ID = events[i].ID, events[j].ID
	return out
}

func TestVerifier_NextAfterABadEventOnlyCounts(t *testing.T) {
	events := linkedEvents(4)
	events[1].Status = 500
	var v verifier
	got := []bool{}
	for _, e := range events {
		got = append(got, v.Next(e))
	}
	if want := []bool{true, false, false, false}; !slices.Equal(got, want) {
		t.Fatalf("Next: %v, want %v", got, want)
	}
	if v.Head(4, events[3].Hash) || v.FirstBad() != 2 || v.Events() != 4 {
		t.Fatalf("firstBad=%d events=%d", v.FirstBad(), v.Events())
	}
}

func TestLinkDetail_IsLink(t *testing.T) {
	e := audit.Event{ID: 7, At: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), RequestID: "r", Actor: "a", Action: audit.PatientSearch,
		ResourceType: "patient", Outcome: audit.Success, Status: 200, Detail: map[string]any{"results": 3, "sources": []string{"x", "y"}, "cacheHit": true}}
	detail, err := canonicalDetail(e.Detail)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(link(genesis(), e), linkDetail(genesis(), e, detail)) {
		t.Fatal("LinkDetail differs from Link")
	}
	if got := string(canonical(e)); !strings.HasSuffix(got, `"status":200,"detail":{"cacheHit":true,"results":3,"sources":["x","y"]}}`) {
		t.Fatalf("canonical form %s", got)
	}
}

// An event without a business has exactly the canonical form (and hash) it
// had before events carried businessId: chains written then still verify.
func TestCanonical_WithoutBusinessKeepsTheFormerBytes(t *testing.T) {
	e := audit.Event{ID: 3, At: time.Date(2025, 3, 1, 9, 30, 0, 5000, time.UTC), RequestID: "r3", Actor: "carol",
		Action: audit.BlobUpload, ResourceType: "blob", ResourceID: "9", Outcome: audit.Success, Status: 201}
	want := `{"id":3,"at":"2025-03-01T09:30:00.000005Z","requestId":"r3","actor":"carol","action":"blob.upload",` +
		`"resourceType":"blob","resourceId":"9","outcome":"success","status":201,"detail":{}}`
	if got := string(canonical(e)); got != want {
		t.Fatalf("canonical:\n got %s\nwant %s", got, want)
	}
	// SHA-256(32 zero bytes || the former form), computed apart.
	const wantHash = "cdf8f2385a28d2587633dbe5f91c44e36ed0e8bfa983217c87f16b59a0e211f6"
	if got := hex.EncodeToString(link(genesis(), e)); got != wantHash {
		t.Fatalf("hash %s, want %s", got, wantHash)
	}
}

func TestCanonical_WithBusinessAddsItAfterResourceID(t *testing.T) {
	e := audit.Event{ID: 3, At: time.Date(2025, 3, 1, 9, 30, 0, 5000, time.UTC), RequestID: "r3", Actor: "carol",
		Action: audit.BlobUpload, ResourceType: "blob", ResourceID: "9",
		BusinessID: "0b0e6f3c-5a1d-4c2e-9f00-3d8e1a2b4c5d", Outcome: audit.Success, Status: 201}
	want := `{"id":3,"at":"2025-03-01T09:30:00.000005Z","requestId":"r3","actor":"carol","action":"blob.upload",` +
		`"resourceType":"blob","resourceId":"9","businessId":"0b0e6f3c-5a1d-4c2e-9f00-3d8e1a2b4c5d",` +
		`"outcome":"success","status":201,"detail":{}}`
	if got := string(canonical(e)); got != want {
		t.Fatalf("canonical:\n got %s\nwant %s", got, want)
	}
	without := e
	without.BusinessID = ""
	if bytes.Equal(link(genesis(), e), link(genesis(), without)) {
		t.Fatal("the business is not covered by the hash")
	}
}

// The chain's format is pinned byte for byte, with and without a business:
// every hash stored before the format moved out of core/audit still
// verifies.
func TestCanonical_GoldenBytesAndHashes(t *testing.T) {
	e := audit.Event{ID: 3, At: time.Date(2025, 3, 1, 9, 30, 0, 5000, time.UTC), RequestID: "r3", Actor: "carol",
		Action: audit.BlobUpload, ResourceType: "blob", ResourceID: "9",
		BusinessID: "0b0e6f3c-5a1d-4c2e-9f00-3d8e1a2b4c5d", Outcome: audit.Success, Status: 201,
		Detail: map[string]any{"results": 2, "note": "<&> é"}}
	without := e
	without.BusinessID = ""
	for _, tt := range []struct {
		name      string
		e         audit.Event
		form, sum string
	}{
		{"with business", e,
			`{"id":3,"at":"2025-03-01T09:30:00.000005Z","requestId":"r3","actor":"carol","action":"blob.upload",` +
				`"resourceType":"blob","resourceId":"9","businessId":"0b0e6f3c-5a1d-4c2e-9f00-3d8e1a2b4c5d",` +
				`"outcome":"success","status":201,"detail":{"note":"\u003c\u0026\u003e é","results":2}}`,
			"2e435bf6f1d2c4ba5efabd0e501b1ebd20ae6347f1bd9d643473dc521c1b0bf3"},
		{"without business", without,
			`{"id":3,"at":"2025-03-01T09:30:00.000005Z","requestId":"r3","actor":"carol","action":"blob.upload",` +
				`"resourceType":"blob","resourceId":"9","outcome":"success","status":201,` +
				`"detail":{"note":"\u003c\u0026\u003e é","results":2}}`,
			"4952c05d10a3258a79d9eaa2ea3edaf372730a53a90adc1d1fb445d3ee0b2af4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(canonical(tt.e)); got != tt.form {
				t.Errorf("canonical:\n got %s\nwant %s", got, tt.form)
			}
			if got := hex.EncodeToString(link(genesis(), tt.e)); got != tt.sum {
				t.Errorf("hash %s, want %s", got, tt.sum)
			}
		})
	}
}
