package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
)

// recordsAnswer is a core that answers a record search of type t with items.
func recordsAnswer(t ehr.ClinicalType, items ...ehr.RecordItem) *SearchMock {
	return &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
		return &ehr.SearchResult{RequestID: "req-1", Status: ehr.StatusSuccess, RecordType: t, Records: items,
			TotalCount: len(items), Page: 1, Limit: 20, Sources: []string{"clinic-a", "clinic-b"}}, nil
	}}
}

// resultsOf is the raw JSON of data.results.
func resultsOf(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct {
		Data struct {
			Results json.RawMessage `json:"results"`
		} `json:"data"`
	}
	if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &body) != nil {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	return string(body.Data.Results)
}

func TestSearch_RecordItemsAreTheContractShape(t *testing.T) {
	size := int64(48213)
	full := ehr.RecordItem{
		ID: "r-1", Type: ehr.TypeObservation, PersonID: "p-1", Date: "2024-03-01T08:30:00-05:00", Status: "final",
		Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "obs-1", PatientID: "123"}, {Source: "clinic-b", RecordID: "9001", PatientID: "b-9"}},
		Code:    ehr.Coding{System: "http://loinc.org", Code: "2345-7", Display: "Glucose"}, Text: "Glucose [Mass/volume]",
		Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
		// Reported in UTC whatever the zone it came in.
		LastUpdated: time.Date(2024, 3, 2, 5, 0, 0, 0, time.FixedZone("EST", -5*3600)),
	}
	observation := func(v *ehr.RecordValue) ehr.RecordItem {
		return ehr.RecordItem{ID: "r-2", Type: ehr.TypeObservation, Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}}, Value: v}
	}
	const bare = `"source":"clinic-a","sources":[{"source":"clinic-a","recordId":"o","patientId":"1"}],"personId":null,"date":null,"status":null,` +
		`"code":{"system":"","code":"","display":""},"text":null,`
	for _, tt := range []struct {
		name string
		item ehr.RecordItem
		want string
	}{
		{"a quantity keeps its digits", full, `{"id":"r-1","recordType":"observation","source":"clinic-a",` +
			`"sources":[{"source":"clinic-a","recordId":"obs-1","patientId":"123"},{"source":"clinic-b","recordId":"9001","patientId":"b-9"}],` +
			`"personId":"p-1","date":"2024-03-01T08:30:00-05:00","status":"final",` +
			`"code":{"system":"http://loinc.org","code":"2345-7","display":"Glucose"},"text":"Glucose [Mass/volume]",` +
			`"value":{"value":5.40,"unit":"mmol/L"},"lastUpdated":"2024-03-02T10:00:00Z"}`},
		{"an exponent is a number too", observation(&ehr.RecordValue{Quantity: &ehr.Quantity{Value: "-1.0e-3", Unit: ""}}),
			`{"id":"r-2","recordType":"observation",` + bare + `"value":{"value":-1.0e-3,"unit":""},"lastUpdated":null}`},
		{"a decimal that is no JSON number is a string", observation(&ehr.RecordValue{Quantity: &ehr.Quantity{Value: ".5", Unit: "%"}}),
			`{"id":"r-2","recordType":"observation",` + bare + `"value":{"value":".5","unit":"%"},"lastUpdated":null}`},
		{"an empty decimal is a string", observation(&ehr.RecordValue{Quantity: &ehr.Quantity{}}),
			`{"id":"r-2","recordType":"observation",` + bare + `"value":{"value":"","unit":""},"lastUpdated":null}`},
		{"a string value", observation(&ehr.RecordValue{String: "positive"}),
			`{"id":"r-2","recordType":"observation",` + bare + `"value":"positive","lastUpdated":null}`},
		{"no value", observation(nil), `{"id":"r-2","recordType":"observation",` + bare + `"value":null,"lastUpdated":null}`},
		{"an empty value", observation(&ehr.RecordValue{}), `{"id":"r-2","recordType":"observation",` + bare + `"value":null,"lastUpdated":null}`},
		{"a document's attachment", ehr.RecordItem{ID: "r-3", Type: ehr.TypeDocumentReference, Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}},
			Attachment: &ehr.Attachment{ContentType: "application/pdf", Title: "Discharge summary", Size: &size}},
			`{"id":"r-3","recordType":"document_reference",` + bare + `"value":null,` +
				`"attachment":{"contentType":"application/pdf","title":"Discharge summary","size":48213},"lastUpdated":null}`},
		{"a document without a size", ehr.RecordItem{ID: "r-3", Type: ehr.TypeDocumentReference, Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}},
			Attachment: &ehr.Attachment{}},
			`{"id":"r-3","recordType":"document_reference",` + bare + `"value":null,"attachment":{"contentType":"","title":"","size":null},"lastUpdated":null}`},
		{"a document without an attachment", ehr.RecordItem{ID: "r-3", Type: ehr.TypeDocumentReference, Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}}},
			`{"id":"r-3","recordType":"document_reference",` + bare + `"value":null,"attachment":null,"lastUpdated":null}`},
		// A value or an attachment on another type is never sent.
		{"other types have neither", ehr.RecordItem{ID: "r-4", Type: ehr.TypeMedicationRequest, Sources: []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}},
			Value: &ehr.RecordValue{String: "x"}, Attachment: &ehr.Attachment{Title: "x"}},
			`{"id":"r-4","recordType":"medication_request",` + bare + `"value":null,"lastUpdated":null}`},
		{"no sources", ehr.RecordItem{ID: "r-5", Type: ehr.TypeCondition},
			`{"id":"r-5","recordType":"condition","source":"","sources":null,"personId":null,"date":null,"status":null,` +
				`"code":{"system":"","code":"","display":""},"text":null,"value":null,"lastUpdated":null}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := searchCall(t, newSearchServer(t, recordsAnswer(tt.item.Type, tt.item)), `{"query":"identifier:MRN-0001","filters":{"recordType":"`+tt.item.Type.Snake()+`"}}`)
			if got := resultsOf(t, w); got != "["+tt.want+"]" {
				t.Fatalf("results\n got %s\nwant [%s]", got, tt.want)
			}
		})
	}
}

func TestSearch_AnEmptyPageIsAnEmptyList(t *testing.T) {
	for name, m := range map[string]*SearchMock{
		"records": recordsAnswer(ehr.TypeImmunization),
		"people": {SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) {
			return &ehr.SearchResult{Status: ehr.StatusSuccess}, nil
		}},
	} {
		if got := resultsOf(t, searchCall(t, newSearchServer(t, m), `{"query":"x"}`)); got != "[]" {
			t.Errorf("%s: results %s, want []", name, got)
		}
	}
}

func TestIsJSONNumber(t *testing.T) {
	for s, want := range map[string]bool{
		"5.40": true, "0": true, "-0.5": true, "1e3": true, "1E+3": true, "-1.0e-3": true, "12345678901234567890.123": true,
		"": false, ".5": false, "5.": false, "+5": false, "05": false, "5 ": false, " 5": false, "0x1F": false, "NaN": false,
		"Infinity": false, "1_000": false, "5,4": false, `"5"`: false, "5 6": false, "-": false, "1e": false, "[5]": false,
	} {
		if got := isJSONNumber(s); got != want {
			t.Errorf("isJSONNumber(%q) = %v, want %v", s, got, want)
		}
	}
}

// The record answer is the one the OpenAPI document describes, and the
// document refuses what a record item must not be.
func TestSearch_RecordAnswerIsAsDocumented(t *testing.T) {
	doc, err := libopenapi.NewDocument(OpenAPIDocument())
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc, config.WithFormatAssertions())
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const body = `{"query":"identifier:MRN-0001","filters":{"recordType":"observation","dateRange":"2024-01-01/2024-12-31"}}`
	// documented reports whether the answer w to body is as documented.
	documented := func(w *httptest.ResponseRecorder) bool {
		t.Helper()
		req := httptest.NewRequest("POST", "/api/v1/search", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer good-alice")
		ok, verrs := v.ValidateHttpRequestResponse(req, w.Result())
		for _, e := range verrs {
			t.Logf("%s: %s", e.Message, e.Reason)
		}
		return ok
	}
	size := int64(10)
	src := []ehr.RecordSource{{Source: "clinic-a", RecordID: "o", PatientID: "1"}}
	for name, items := range map[ehr.ClinicalType][]ehr.RecordItem{
		ehr.TypeObservation: {
			{ID: "1", Type: ehr.TypeObservation, Sources: src, PersonID: "p", Date: "2024-03", Status: "final", Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "5.40", Unit: "mmol/L"}},
				LastUpdated: time.Date(2024, 3, 2, 0, 0, 0, 0, time.UTC)},
			{ID: "2", Type: ehr.TypeObservation, Sources: src, Value: &ehr.RecordValue{Quantity: &ehr.Quantity{Value: "n/a"}}},
			{ID: "3", Type: ehr.TypeObservation, Sources: src, Value: &ehr.RecordValue{String: "positive"}},
			{ID: "4", Type: ehr.TypeObservation, Sources: src},
		},
		ehr.TypeDocumentReference: {
			{ID: "5", Type: ehr.TypeDocumentReference, Sources: src, Attachment: &ehr.Attachment{ContentType: "text/plain", Size: &size}},
			{ID: "6", Type: ehr.TypeDocumentReference, Sources: src},
		},
		ehr.TypeEncounter: {{ID: "7", Type: ehr.TypeEncounter, Sources: src, Code: ehr.Coding{Code: "AMB"}}},
	} {
		if !documented(searchCall(t, newSearchServer(t, recordsAnswer(name, items...)), body)) {
			t.Errorf("%s: the answer is not as documented", name)
		}
	}
	// What the document must refuse: a value outside an observation, an
	// attachment outside a document, a document without its attachment
	// (the first, a valid item, shows the answer is otherwise fine).
	const rest = `"source":"a","sources":null,"personId":null,"date":null,"status":null,"code":{"system":"","code":"","display":""},"text":null,`
	for i, raw := range []string{
		`{"id":"1","recordType":"condition",` + rest + `"value":null,"lastUpdated":null}`,
		`{"id":"1","recordType":"condition",` + rest + `"value":"x","lastUpdated":null}`,
		`{"id":"1","recordType":"observation",` + rest + `"value":null,"attachment":null,"lastUpdated":null}`,
		`{"id":"1","recordType":"document_reference",` + rest + `"value":null,"lastUpdated":null}`,
		`{"id":"1","recordType":"observation",` + rest + `"value":{"value":true,"unit":""},"lastUpdated":null}`,
	} {
		w := httptest.NewRecorder()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "r")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(200)
		w.Body = bytes.NewBufferString(`{"requestId":"r","status":"success","data":{"results":[` + raw +
			`],"totalCount":1,"page":1,"limit":20},"metadata":{"searchTime":"1ms","sources":[],"cacheHit":false}}`)
		if ok := documented(w); ok != (i == 0) {
			t.Errorf("documented %v: %s", ok, raw)
		}
	}
}

func TestAudit_ARecordSearchIsAuditedAsItsType(t *testing.T) {
	tooBroad := &core.Error{Kind: core.KindInvalid, Code: "query_too_broad", Message: "The query matches more than 10 people"}
	answer := func(res *ehr.SearchResult, err error) *SearchMock {
		return &SearchMock{SearchFunc: func(context.Context, ehr.SearchRequest) (*ehr.SearchResult, error) { return res, err }}
	}
	records := &ehr.SearchResult{Status: ehr.StatusSuccess, RecordType: ehr.TypeMedicationRequest, Sources: []string{"clinic-a"},
		Records: []ehr.RecordItem{{ID: "r1", Type: ehr.TypeMedicationRequest}, {ID: "r2", Type: ehr.TypeMedicationRequest}}}
	people := &ehr.SearchResult{Status: ehr.StatusSuccess, Sources: []string{"clinic-a"}, Results: []ehr.Person{{ID: "p1"}}}
	for _, tt := range []struct {
		name, body   string
		core         *SearchMock
		status       int
		resourceType string
		detail       map[string]any
	}{
		{"answered", `{"query":"identifier:MRN-0001","filters":{"recordType":"medication_request"}}`, answer(records, nil), 200,
			"MedicationRequest", map[string]any{"results": 2, "sources": []string{"clinic-a"}, "cacheHit": false, "recordType": "medication_request"}},
		{"any letter case", `{"query":"identifier:MRN-0001","filters":{"recordType":"Medication_Request"}}`, answer(records, nil), 200,
			"MedicationRequest", map[string]any{"results": 2, "sources": []string{"clinic-a"}, "cacheHit": false, "recordType": "medication_request"}},
		{"refused for the scope", `{"query":"identifier:MRN-0001","filters":{"recordType":"observation"}}`,
			answer(nil, core.InsufficientScope("user/Observation.rs")), 403, "Observation", map[string]any{"recordType": "observation"}},
		{"too broad", `{"query":"Smith","filters":{"recordType":"document_reference"}}`, answer(nil, tooBroad), 400,
			"DocumentReference", map[string]any{"recordType": "document_reference"}},
		{"a date range that does not parse", `{"query":"Smith","filters":{"recordType":"condition","dateRange":"2024"}}`, answer(records, nil), 400,
			"Condition", map[string]any{"recordType": "condition"}},
		{"people", `{"query":"Smith","filters":{"recordType":"all"}}`, answer(people, nil), 200,
			"patient", map[string]any{"results": 1, "sources": []string{"clinic-a"}, "cacheHit": false}},
		{"an unknown type", `{"query":"Smith","filters":{"recordType":"vitals"}}`,
			answer(nil, ehr.ErrRecordTypeNotSupported), 400, "patient", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := &trail{}
			w := do(t, auditedServer(t, a, &StorageMock{}, &SchedulingMock{}, tt.core), "POST", "/api/v1/search", strings.NewReader(tt.body), "Content-Type", "application/json")
			e := a.only(t)
			if w.Code != tt.status || e.Status != tt.status || e.Action != audit.PatientSearch || e.ResourceType != tt.resourceType || !sameDetail(e.Detail, tt.detail) {
				t.Fatalf("status %d, event %+v; want %d %s %v", w.Code, e, tt.status, tt.resourceType, tt.detail)
			}
		})
	}
}
