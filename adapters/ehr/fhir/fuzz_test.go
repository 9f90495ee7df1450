package fhir

import (
	"encoding/json"
	"errors"
	"reflect"
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

func FuzzToRecord(f *testing.F) {
	for _, typ := range ehr.ClinicalTypes {
		f.Add(string(typ), []byte(`{"resourceType":"`+string(typ)+`","id":"1"}`))
	}
	for _, seed := range []string{
		``,
		`null`,
		`[]`,
		`{}`,
		`{"resourceType":"Observation","id":"o","valueQuantity":{"value":5.40,"code":"%"},"subject":{"reference":"Patient/"}}`,
		`{"resourceType":"Observation","id":"o","valueQuantity":{"value":"1e400"},"valueString":null,"valueCodeableConcept":{"coding":[]}}`,
		`{"resourceType":"Encounter","id":"e","class":null,"type":[{}],"period":{"start":7}}`,
		`{"resourceType":"Condition","id":"c","clinicalStatus":{"coding":[null]},"onsetPeriod":null,"subject":{"reference":"/Patient//_history/"}}`,
		`{"resourceType":"DocumentReference","id":"d","content":[{"attachment":{"size":-1,"url":"u","data":"ZA=="}},null]}`,
		`{"resourceType":"DocumentReference","id":"d","content":[{"attachment":{"size":"12"}}]}`,
		`{"resourceType":"OperationOutcome","issue":[{"diagnostics":"x"}]}`,
		`{"resourceType":"Immunization","id":"i","meta":{"lastUpdated":"2024-01-01T00:00:00+14:00"}}`,
	} {
		f.Add("Observation", []byte(seed))
		f.Add("DocumentReference", []byte(seed))
	}
	f.Add("Patient", []byte(`{"resourceType":"Patient","id":"1"}`))
	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		ct := ehr.ClinicalType(typ)
		r, err := toRecord(ct, raw)
		if !isClinical(ct) {
			if err == nil {
				t.Fatalf("type %q converted", typ)
			}
			return
		}
		if err != nil {
			var de *decodeError
			if !errors.As(err, &de) || de.msg == "" {
				t.Fatalf("error %v is not a *decodeError with a message", err)
			}
			if !utf8.ValidString(de.msg) {
				t.Fatalf("message %q is not UTF-8", de.msg)
			}
			if !reflect.DeepEqual(r, ehr.Record{}) {
				t.Fatal("record alongside an error")
			}
			return
		}
		if !json.Valid(raw) {
			t.Fatal("invalid JSON accepted")
		}
		if r.Type != ct || r.ID == "" || r.ID != strings.TrimSpace(r.ID) {
			t.Fatalf("type %q, id %q", r.Type, r.ID)
		}
		if r.Value != nil && (ct != ehr.TypeObservation || (r.Value.Quantity != nil && r.Value.Quantity.Value == "")) {
			t.Fatalf("value %+v on %s", r.Value, ct)
		}
		if r.Attachment != nil && ct != ehr.TypeDocumentReference {
			t.Fatalf("attachment on %s", ct)
		}
		if r.Attachment != nil && r.Attachment.Size != nil && *r.Attachment.Size < 0 {
			t.Fatalf("size %d", *r.Attachment.Size)
		}
		if !r.LastUpdated.IsZero() && r.LastUpdated.Location() != time.UTC {
			t.Fatalf("last updated %v not in UTC", r.LastUpdated)
		}
		_, _ = recordDateParam(ct)
	})
}

func isClinical(t ehr.ClinicalType) bool {
	for _, c := range ehr.ClinicalTypes {
		if c == t {
			return true
		}
	}
	return false
}
