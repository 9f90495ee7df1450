package fhir

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/carebridge/carebridge/core/ehr"
)

func FuzzDecodeBundle(f *testing.F) {
	for _, seed := range []string{
		``,
		`null`,
		`[]`,
		`{}`,
		`{"resourceType":"Bundle"}`,
		`{"resourceType":"Bundle","entry":null,"link":null}`,
		`{"resourceType":"Bundle","link":[{"relation":"next","url":"https://x/Patient?page=2"}],"entry":[{"resource":{"resourceType":"Patient","id":"1"}}]}`,
		`{"resourceType":"Bundle","entry":[{"resource":{"resourceType":"Patient","name":[{"use":"official","given":[null,"A"],"family":"B"}],"identifier":[{"value":"1","type":{"coding":[{},{"code":"MR"}]}}],"telecom":[{"value":"1"}],"address":[{"line":[null,""]}],"meta":{"lastUpdated":"2024-01-01T00:00:00Z"},"birthDate":"2000-02-30","gender":"x"}}]}`,
		`{"resourceType":"Bundle","entry":[{"resource":null},{"resource":5},{"resource":{"resourceType":"Patient","name":"x"}}]}`,
		`{"resourceType":"Bundle","entry":[{"search":{"mode":"outcome"},"resource":{"resourceType":"OperationOutcome","issue":[{"diagnostics":"d"}]}}]}`,
		`{"resourceType":"OperationOutcome","issue":[{"diagnostics":"bad","details":{"text":"t","coding":[{"display":"d"}]}},{}]}`,
		`{"resourceType":"Patient"}`,
		`{"resourceType":["Bundle"]}`,
		`{"resourceType":"Bundle","entry":[{"resource":{"resourceType":"Patient","meta":[],"name":[{}]}}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pg, err := decodeBundle(body, "src")
		_ = outcomeText(body)
		if err != nil {
			var de *decodeError
			if !errors.As(err, &de) || de.msg == "" {
				t.Fatalf("error %v is not a *decodeError with a message", err)
			}
			if !utf8.ValidString(de.msg) {
				t.Fatalf("message %q is not UTF-8", de.msg)
			}
			if pg.patients != nil {
				t.Fatal("patients alongside an error")
			}
			return
		}
		if pg.patients == nil {
			t.Fatal("nil patients without an error")
		}
		if !json.Valid(body) {
			t.Fatal("invalid JSON accepted")
		}
		for _, p := range pg.patients {
			if p.Source != "src" {
				t.Fatalf("source = %q", p.Source)
			}
			if p.BirthDate != "" && ehr.NormalDate(p.BirthDate) != p.BirthDate {
				t.Fatalf("birth date %q kept", p.BirthDate)
			}
			if !p.LastUpdated.IsZero() && p.LastUpdated.Location() != time.UTC {
				t.Fatalf("last updated %v not in UTC", p.LastUpdated)
			}
		}
	})
}

func TestClip(t *testing.T) {
	tests := []struct{ in, want string }{
		{"  a \n\t b\x00c  ", "a b c"},
		{"bidi\u202eoverride", "bidi override"},
		{"bad\xffutf8", "badutf8"},
	}
	for _, tt := range tests {
		if got := clip(tt.in); got != tt.want {
			t.Errorf("clip(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	long := clip(strings.Repeat("€", 200)) // 600 bytes
	if len(long) > maxDetail+len("…") || !utf8.ValidString(long) {
		t.Errorf("clip of a long text = %d bytes, valid %v", len(long), utf8.ValidString(long))
	}
}
