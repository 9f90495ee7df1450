package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/core"
)

// strictMessage is the message of unmarshalStrict's refusal of body into v,
// or "" when it accepts it; any refusal must be invalid_json.
func strictMessage(t *testing.T, body string, v any) string {
	t.Helper()
	err := unmarshalStrict([]byte(body), v)
	if err == nil {
		return ""
	}
	var e *core.Error
	if !errors.As(err, &e) || e.Code != "invalid_json" || e.Kind != core.KindInvalid {
		t.Fatalf("%.80s: refused with %v, want invalid_json", body, err)
	}
	return e.Message
}

// nestedValue is levels levels of arrays (open "[", close "]") or objects
// (open `{"a":`, close "}") around 1.
func nestedValue(open, close string, levels int) string {
	return strings.Repeat(open, levels) + "1" + strings.Repeat(close, levels)
}

func TestUnmarshalStrict_NestingOf64LevelsIsAcceptedAnd65Refused(t *testing.T) {
	for _, tt := range []struct{ name, levels64, levels65 string }{
		{"arrays", nestedValue("[", "]", 64), nestedValue("[", "]", 65)},
		{"objects", nestedValue(`{"a":`, "}", 64), nestedValue(`{"a":`, "}", 65)},
		{"mixed", nestedValue(`[{"a":`, "}]", 32), "[" + nestedValue(`[{"a":`, "}]", 32) + "]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if msg := strictMessage(t, tt.levels64, &v); msg != "" {
				t.Fatalf("64 levels refused: %s", msg)
			}
			if msg := strictMessage(t, tt.levels65, &v); msg != "JSON nesting is deeper than 64 levels" {
				t.Fatalf("65 levels: %q", msg)
			}
		})
	}
}

func TestUnmarshalStrict_DeepNestingIsRefusedBeforeDecodingAndCheaply(t *testing.T) {
	for name, body := range map[string][]byte{
		"1 MiB of [":           nested("[", maxJSONBytes),
		`1 MiB of {"a":`:       nested(`{"a":`, maxJSONBytes/5),
		"after an unknown key": append([]byte(`{"unknown":`), nested("[", 100)...),
		"after a wrong type":   append([]byte(`{"query":`), nested("[", 100)...),
		"after a duplicate":    append([]byte(`{"query":"a","query":`), nested("[", 100)...),
		"closed, 65 levels":    []byte(nestedValue("[", "]", 65)),
		"in trailing data":     append([]byte(`{} `), nested("[", 100)...),
	} {
		t.Run(name, func(t *testing.T) {
			var req searchRequest
			if msg := strictMessage(t, string(body), &req); msg != errJSONTooDeep.Message {
				t.Fatalf("got %q", msg)
			}
		})
	}
	body := nested("[", maxJSONBytes)
	if allocs := testing.AllocsPerRun(10, func() { _ = unmarshalStrict(body, &searchRequest{}) }); allocs > 20 {
		t.Fatalf("refusing 1 MiB of nesting made %v allocations", allocs)
	}
}

func TestUnmarshalStrict_DuplicateKeyIsNamedByItsPath(t *testing.T) {
	type entry struct {
		Day *string `json:"day"`
	}
	var many strings.Builder // an object of 40 keys, the last one a repeat
	many.WriteString(`{`)
	for i := range 39 {
		many.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	many.WriteString(`"k7":2}`)
	for _, tt := range []struct {
		body string
		v    any
		want string
	}{
		{`{"name":"a","name":"b"}`, &editBusinessRequest{}, "Duplicate key name"},
		{`{"patient":{"email":"a@x.org","email":"b@x.org"}}`, &bookingRequest{}, "Duplicate key patient.email"},
		{`{"operatingHours":[{"day":"Monday"},{"day":"Monday","day":"Friday"}]}`, &struct {
			OperatingHours []entry `json:"operatingHours"`
		}{}, "Duplicate key operatingHours[1].day"},
		{`[{"x":1},[{"x":1,"x":2}]]`, new(any), "Duplicate key [1][0].x"},
		{`{"a":1,"\u0061":2}`, new(any), "Duplicate key a"}, // the same key, escaped
		{many.String(), new(any), "Duplicate key k7"},
		// Keys name fields exactly: encoding/json alone would take these.
		{`{"name":"A","NAME":"B"}`, &editBusinessRequest{}, `Unknown field "NAME"`},
		{`{"Name":"A"}`, &editBusinessRequest{}, `Unknown field "Name"`},
		{`{"patient":{"Email":"a@x.org"}}`, &bookingRequest{}, `Unknown field "patient.Email"`},
		{`{"operatingHours":[{"day":"Monday"},{"DAY":"Friday"}]}`, &struct {
			OperatingHours []entry `json:"operatingHours"`
		}{}, `Unknown field "operatingHours[1].DAY"`},
	} {
		if msg := strictMessage(t, tt.body, tt.v); msg != tt.want {
			t.Errorf("%s: got %q, want %q", tt.body, msg, tt.want)
		}
	}
}

func TestUnmarshalStrict_WhatOnlyLooksLikeNestingOrRepeatsIsAccepted(t *testing.T) {
	for _, body := range []string{
		`{"query":"` + strings.Repeat(`[{\"a\":`, 100) + `"}`, // inside a string
		`{"query":"\"query\":1,\"query\":2 \\"}`,              // keys inside a string, an escaped backslash
		`[{"a":1},{"a":2},{"b":{"a":3}}]`,                     // the same key in different objects
		`{"a":{"a":{"a":1}}}`,                                 // and nested in itself
		`{"a":"b","b":"a"}`,                                   // a value equal to a key
		`{"A":1,"a":2}`,                                       // keys differ in case
	} {
		var v any
		if msg := strictMessage(t, body, &v); msg != "" {
			t.Errorf("%s: %q", body, msg)
		}
	}
}

func TestUnmarshalStrict_SyntaxErrorsAreTheDecodersToName(t *testing.T) {
	for body, want := range map[string]string{
		`{"a":1]`:         "The body is not valid JSON (at byte 7)",
		`]`:               "The body is not valid JSON (at byte 1)",
		`{"a":"\x"}`:      "The body is not valid JSON (at byte 8)",
		`{"a":1,"a`:       "The body is empty or cut short",
		`{"a":[1,2}`:      "The body is not valid JSON (at byte 10)",
		`{"\q":1,"\q":2}`: "The body is not valid JSON (at byte 4)",
	} {
		var v any
		if msg := strictMessage(t, body, &v); msg != want {
			t.Errorf("%s: got %q, want %q", body, msg, want)
		}
	}
}

// referenceStructure is the nesting depth and whether a key repeats in an
// object of a valid JSON body, found the slow way, with encoding/json's
// tokens.
func referenceStructure(body []byte) (depth int, repeated bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber() // any number is a token, even one too large for a float64
	type frame struct {
		object  bool
		keys    map[string]bool
		wantKey bool
	}
	var open []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return depth, repeated
		}
		if err != nil {
			panic(err) // body is valid JSON
		}
		if len(open) > 0 && open[len(open)-1].object {
			top := open[len(open)-1]
			if key, ok := tok.(string); ok && top.wantKey {
				repeated = repeated || top.keys[key]
				top.keys[key], top.wantKey = true, false
				continue
			}
			top.wantKey = true
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			open = append(open, &frame{object: tok == json.Delim('{'), keys: map[string]bool{}, wantKey: true})
			depth = max(depth, len(open))
		case json.Delim('}'), json.Delim(']'):
			open = open[:len(open)-1]
		}
	}
}

// FuzzUnmarshalStrict: any body decodes or is refused as invalid_json,
// nothing panics; a body is accepted exactly when encoding/json finds it
// valid, it nests at most 64 levels and no object repeats a key.
func FuzzUnmarshalStrict(f *testing.F) {
	f.Add([]byte(`{"id":1,"day":"Monday","start_time":"09:00","end_time":"10:00"}`))
	f.Add([]byte(`{"a":{"b":1,"b":2}}`))
	f.Add([]byte(`[{"x":1}]`))
	f.Add([]byte(`{"a":1,"\u0061":2}`))
	f.Add([]byte(`{"q":"[{\"a\":1,\"a\":2}]\\"}`))
	f.Add([]byte(nestedValue("[", "]", 64)))
	f.Add([]byte(nestedValue(`{"a":`, "}", 65)))
	f.Add([]byte("{\"\xff\":1,\"\xfe\":2}"))
	f.Fuzz(func(t *testing.T, body []byte) {
		var hours struct {
			ID *int64 `json:"id"`
			hoursEntry
		}
		if err := unmarshalStrict(body, &hours); err != nil && errCode(err) != "invalid_json" {
			t.Fatalf("struct: unexpected error %v", err)
		}

		var raw json.RawMessage
		err := unmarshalStrict(body, &raw)
		if err != nil && errCode(err) != "invalid_json" {
			t.Fatalf("unexpected error %v", err)
		}
		if !json.Valid(body) {
			if err == nil {
				t.Fatalf("accepted invalid JSON %q", body)
			}
			return
		}
		depth, repeated := referenceStructure(body)
		var msg string
		if err != nil {
			msg = err.(*core.Error).Message
		}
		switch {
		case depth > maxJSONDepth:
			if msg != errJSONTooDeep.Message {
				t.Fatalf("depth %d: got %v", depth, err)
			}
		case repeated:
			if !strings.HasPrefix(msg, "Duplicate key ") {
				t.Fatalf("a repeated key: got %v", err)
			}
		case err != nil:
			t.Fatalf("valid, depth %d, no repeated key, refused: %v", depth, err)
		case !bytes.Equal(raw, bytes.Trim(body, " \t\r\n")):
			t.Fatalf("decoded %q", raw)
		}
	})
}

// allMocks is a server whose use cases are mocks without behaviour: a
// request that reaches one panics, which the server answers with 500.
func allMocks(t *testing.T) *Server {
	t.Helper()
	return New(Config{
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Auth: tokens{}, Storage: &StorageMock{},
		Business: &BusinessMock{}, Search: &SearchMock{}, Scheduling: &SchedulingMock{}, Registry: prometheus.NewRegistry(),
		Ready: func(context.Context) error { return nil }, MaxUploadBytes: 1 << 20,
	})
}

// pathVar is a path template's variable.
var pathVar = regexp.MustCompile(`\{[^}]+\}`)

func TestJSONEndpoints_RefuseDeepNestingBeforeTheCore(t *testing.T) {
	s := allMocks(t)
	var tried int
	for op, doc := range documentedOperations(t) {
		if doc.RequestBody == nil || doc.RequestBody.Content.GetOrZero("application/json") == nil {
			continue
		}
		tried++
		path := pathVar.ReplaceAllString(op.path, "1")
		for kind, body := range map[string][]byte{"[": nested("[", maxJSONBytes), `{"a":`: nested(`{"a":`, maxJSONBytes/5)} {
			w := biz(t, s, op.method, path, bytes.NewReader(body))
			if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_json" || e.Message != errJSONTooDeep.Message {
				t.Errorf("%s %s, 1 MiB of %s: %d %s %q", op.method, op.path, kind, w.Code, e.Code, e.Message)
			}
		}
	}
	if tried < 8 {
		t.Fatalf("only %d operations take a JSON body", tried)
	}
	// The location form's JSON-valued groups are read by the same decoder
	// (once the caller's role allows reading the form at all).
	manager := newBusinessServer(t, &BusinessMock{AuthorizeLocationUpdateFunc: func(context.Context, int64) error { return nil }})
	for _, group := range []string{"generalInfo", "address"} {
		body, ct := locationForm(t, formPart{name: group, value: strings.Repeat("[", maxFieldBytes)})
		w := biz(t, manager, "PUT", "/business/location/3/update", body, "Content-Type", ct)
		if e := errEnvelope(t, w); w.Code != 400 || e.Code != "invalid_json" || !strings.Contains(e.Message, "deeper than 64") {
			t.Errorf("%s part: %d %s %q", group, w.Code, e.Code, e.Message)
		}
	}
}
