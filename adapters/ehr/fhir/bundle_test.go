package fhir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// namedDoer is a Doer that only names its EHR; the bundle helpers send
// nothing.
type namedDoer struct{}

func (namedDoer) Name() string                  { return "TestEHR" }
func (namedDoer) URL(string, url.Values) string { return "http://ehr.test/" }
func (namedDoer) Do(context.Context, *http.Request) (*http.Response, error) {
	return nil, errors.New("no request expected")
}

func TestEntries_KeepResourcesAndLeaveOutOutcomesWithTheirPlace(t *testing.T) {
	s := NewScheduler(namedDoer{})
	b, err := readBundle([]byte(`{"resourceType":"Bundle","entry":[
		{"resource":{"resourceType":"OperationOutcome"}},
		{"resource":{"resourceType":"Slot","id":"s1"},"search":{"mode":"match"}},
		{"resource":{"resourceType":"Patient","id":"p1"},"search":{"mode":"outcome"}},
		{},
		{"resource":{"resourceType":"Schedule","id":"sc1"},"search":{"mode":"include"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.c.entries(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].typ != "Slot" || got[0].id != "s1" || got[0].index != 1 || !got[0].matched() ||
		got[1].typ != "Schedule" || got[1].index != 4 || got[1].matched() {
		t.Errorf("entries = %+v; want Slot s1 (entry 1, matched) and Schedule sc1 (entry 4, included)", got)
	}
}

func TestDecodeEntry_MalformedResourceIsABadResponseNamingTheEntry(t *testing.T) {
	s := NewScheduler(namedDoer{})
	sl, err := decodeEntry[slot](s.c, entry{typ: "Slot", raw: []byte(`{"resourceType":"Slot","status":"free","start":"2026-01-01T09:00:00Z"}`), index: 0})
	if err != nil || sl.Status != "free" || sl.Start != "2026-01-01T09:00:00Z" {
		t.Fatalf("decodeEntry = %+v, %v; want the free Slot", sl, err)
	}
	_, err = decodeEntry[slot](s.c, entry{typ: "Slot", raw: []byte(`{"resourceType":"Slot","status":7}`), index: 3})
	var e *core.Error
	if !errors.As(err, &e) || e.Kind != core.KindBadGateway || e.Code != "ehr_bad_response" ||
		e.Message != "TestEHR sent an invalid answer: entry 3 is not a valid Slot" {
		t.Errorf("err = %v; want ehr_bad_response about entry 3 of type Slot", err)
	}
}

// readBundle decodes a good Bundle at once and names what is wrong with
// any other body as checkResourceType does: a bad id or resourceType, a
// body that is not a Bundle (an OperationOutcome's text included) or not
// JSON, and a Bundle whose fields do not decode.
func TestReadBundle_GoodOnceBadNamed(t *testing.T) {
	b, err := readBundle([]byte(`{"resourceType":"Bundle","id":"b1","total":1,
		"link":[{"relation":"next","url":"http://ehr.test/next"}],"entry":[{"resource":{"resourceType":"Slot","id":"s1"}}]}`))
	if err != nil || b.Total == nil || *b.Total != 1 || b.next() != "http://ehr.test/next" || len(b.Entry) != 1 {
		t.Fatalf("readBundle = %+v, %v; want the Bundle with its total, next link and entry", b, err)
	}
	for _, tt := range []struct{ name, body, want string }{
		{"an id that is a number", `{"resourceType":"Bundle","id":5,"entry":[]}`, "the body is not a FHIR resource"},
		{"a resourceType that is a number", `{"resourceType":7}`, "the body is not a FHIR resource"},
		{"no resourceType", `{"entry":[]}`, "the body is not a FHIR resource"},
		{"a Patient", `{"resourceType":"Patient","id":"p1"}`, "it is a Patient, not a Bundle"},
		{"an OperationOutcome", `{"resourceType":"OperationOutcome","issue":[{"diagnostics":"down for maintenance"}]}`,
			"it is an OperationOutcome, not a Bundle: down for maintenance"},
		{"not JSON", `<html>`, "the body is not valid JSON"},
		{"cut short", `{"resourceType":"Bundle","entry":[`, "the body is not valid JSON"},
		{"entry not an array", `{"resourceType":"Bundle","entry":{"resource":{}}}`, "the Bundle is malformed"},
		{"total not a number", `{"resourceType":"Bundle","total":"many"}`, "the Bundle is malformed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := readBundle([]byte(tt.body))
			var de *decodeError
			if !errors.As(err, &de) || de.msg != tt.want || b.ResourceType != "" || b.Entry != nil {
				t.Errorf("readBundle = %+v, %v; want an empty bundle and %q", b, err, tt.want)
			}
		})
	}
}

// BenchmarkRecordPage splits the CPU of one page of a record search (100
// Observations, as test/bench's BenchmarkRecords serves them): the Bundle
// decode and the entries' headers, which come before the next page is
// asked for, and the conversion, which runs beside it.
func BenchmarkRecordPage(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "records", "observation.json"))
	if err != nil {
		b.Fatal(err)
	}
	var page bytes.Buffer
	page.WriteString(`{"resourceType":"Bundle","type":"searchset","total":500,"link":[{"relation":"next","url":"http://ehr.test/fhir/Observation?page=2"}],"entry":[`)
	for i := range 100 {
		if i > 0 {
			page.WriteByte(',')
		}
		fmt.Fprintf(&page, `{"search":{"mode":"match"},"resource":%s}`, bytes.Replace(raw, []byte(`"id"`), []byte(fmt.Sprintf(`"id":"o%d","x"`, i)), 1))
	}
	page.WriteString(`]}`)
	c := NewScheduler(namedDoer{}).c
	var entries []entry
	b.Run("bundle+headers", func(b *testing.B) {
		for b.Loop() {
			bd, err := readBundle(page.Bytes())
			if err != nil {
				b.Fatal(err)
			}
			if entries, err = c.entries(bd); err != nil || len(entries) != 100 {
				b.Fatal(len(entries), err)
			}
		}
	})
	b.Run("convert", func(b *testing.B) {
		for b.Loop() {
			for _, e := range entries {
				if _, err := convertTyped(ehr.TypeObservation, e.raw); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
