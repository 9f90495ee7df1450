package fhir_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// errOtherHost is what testDoer answers for a URL on another host, as
// ehrhttp.Client does.
var errOtherHost = &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_url", Message: "clinic-a: refused a URL on another host"}

// testDoer is a tiny fhir.Doer over net/http that, like ehrhttp.Client,
// refuses URLs on other hosts than its base URL's.
type testDoer struct {
	name   string
	base   *url.URL
	client *http.Client
	err    error // when set, Do fails with it
}

func (d *testDoer) Name() string { return d.name }

func (d *testDoer) URL(path string, query url.Values) string {
	return d.base.String() + path + "?" + query.Encode()
}

func (d *testDoer) Do(ctx context.Context, req *http.Request) (*http.Response, error) {
	if d.err != nil {
		return nil, d.err
	}
	if req.URL.Scheme != d.base.Scheme || req.URL.Host != d.base.Host {
		return nil, errOtherHost
	}
	return d.client.Do(req.WithContext(ctx))
}

// newFakeEHR is a scripted FHIR server: a fakeFHIR that answers every
// request with h (and records it), and a testDoer for it.
func newFakeEHR(t *testing.T, h func(w http.ResponseWriter, r *http.Request)) (*fakeFHIR, *testDoer) {
	t.Helper()
	f := newFakeFHIR(t)
	f.intercept = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
		h(w, r)
		return true
	}
	base, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	return f, &testDoer{name: "clinic-a", base: base, client: f.Client()}
}

func writeFHIR(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/fhir+json")
	w.WriteHeader(status)
	fmt.Fprint(w, body)
}

func bundleOf(next string, resources ...string) string {
	var b strings.Builder
	b.WriteString(`{"resourceType":"Bundle","type":"searchset","link":[{"relation":"self","url":"x"}`)
	if next != "" {
		fmt.Fprintf(&b, `,{"relation":"next","url":%q}`, next)
	}
	b.WriteString(`],"entry":[`)
	for i, r := range resources {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"fullUrl":"urn:x","resource":%s,"search":{"mode":"match"}}`, r)
	}
	b.WriteString(`]}`)
	return b.String()
}

func patientJSON(id string) string {
	return fmt.Sprintf(`{"resourceType":"Patient","id":%q,"name":[{"family":"Doe","given":["P%s"]}]}`, id, id)
}

func coreError(t *testing.T, err error) *core.Error {
	t.Helper()
	var e *core.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *core.Error", err, err)
	}
	return e
}

func TestSearchPatients_SendsParametersForEveryQueryField(t *testing.T) {
	from := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	to := time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		q    ehr.PatientQuery
		want url.Values
	}{
		{"text", ehr.PatientQuery{Text: "Ana Lopez", Max: 20},
			url.Values{"name": {"Ana", "Lopez"}, "_count": {"20"}}},
		{"family", ehr.PatientQuery{Family: "Lopez", Max: 20},
			url.Values{"family": {"Lopez"}, "_count": {"20"}}},
		{"given", ehr.PatientQuery{Given: "Ana", Max: 20},
			url.Values{"given": {"Ana"}, "_count": {"20"}}},
		{"birthdate", ehr.PatientQuery{BirthDate: "1980-02-01", Max: 20},
			url.Values{"birthdate": {"1980-02-01"}, "_count": {"20"}}},
		{"gender", ehr.PatientQuery{Gender: "female", Max: 20},
			url.Values{"gender": {"female"}, "_count": {"20"}}},
		{"identifier", ehr.PatientQuery{Identifier: "MRN-123", Max: 20},
			url.Values{"identifier": {"MRN-123"}, "_count": {"20"}}},
		{"identifier with system", ehr.PatientQuery{Identifier: "urn:oid:1.2.3|MRN-123", Max: 20},
			url.Values{"identifier": {"urn:oid:1.2.3|MRN-123"}, "_count": {"20"}}},
		{"phone", ehr.PatientQuery{Phone: "+1 555 0100", Max: 20},
			url.Values{"phone": {"+1 555 0100"}, "_count": {"20"}}},
		{"updated from", ehr.PatientQuery{UpdatedFrom: from, Max: 20},
			url.Values{"_lastUpdated": {"ge2024-01-02"}, "_count": {"20"}}},
		{"updated to", ehr.PatientQuery{UpdatedTo: to, Max: 20},
			url.Values{"_lastUpdated": {"le2024-03-04"}, "_count": {"20"}}},
		{"date range", ehr.PatientQuery{UpdatedFrom: from, UpdatedTo: to, Max: 20},
			url.Values{"_lastUpdated": {"ge2024-01-02", "le2024-03-04"}, "_count": {"20"}}},
		{"count capped at 100", ehr.PatientQuery{Family: "Lopez", Max: 250},
			url.Values{"family": {"Lopez"}, "_count": {"100"}}},
		{"count default", ehr.PatientQuery{Family: "Lopez"},
			url.Values{"family": {"Lopez"}, "_count": {"100"}}},
		{"blank fields are not sent", ehr.PatientQuery{Family: "  ", Given: "Ana", Max: 5},
			url.Values{"given": {"Ana"}, "_count": {"5"}}},
		{"all", ehr.PatientQuery{Text: "ana", Family: "Lopez", Given: "Ana", BirthDate: "1980-02-01",
			Gender: "female", Identifier: "sys|1", Phone: "5550100", UpdatedFrom: from, UpdatedTo: to, Max: 50},
			url.Values{"name": {"ana"}, "family": {"Lopez"}, "given": {"Ana"}, "birthdate": {"1980-02-01"},
				"gender": {"female"}, "identifier": {"sys|1"}, "phone": {"5550100"},
				"_lastUpdated": {"ge2024-01-02", "le2024-03-04"}, "_count": {"50"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
				writeFHIR(w, 200, bundleOf(""))
			})
			if _, err := fhir.New(d, "").SearchPatients(context.Background(), tt.q); err != nil {
				t.Fatal(err)
			}
			reqs := f.gotRequests()
			if len(reqs) != 1 {
				t.Fatalf("requests = %d, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != http.MethodGet || r.URL.Path != "/Patient" {
				t.Errorf("request = %s %s, want GET /Patient", r.Method, r.URL.Path)
			}
			if got := r.Header.Get("Accept"); got != "application/fhir+json" {
				t.Errorf("Accept = %q", got)
			}
			if got := r.URL.Query(); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("query = %v (%s)\nwant    %v", got, r.URL.RawQuery, tt.want)
			}
		})
	}
}

func TestSearchPatients_UsesTheConfiguredEndpoint(t *testing.T) {
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf(""))
	})
	if _, err := fhir.New(d, "/r4/Patient").SearchPatients(context.Background(), ehr.PatientQuery{Family: "x"}); err != nil {
		t.Fatal(err)
	}
	if got := f.gotRequests()[0].URL.Path; got != "/r4/Patient" {
		t.Errorf("path = %q, want /r4/Patient", got)
	}
}

// threePages serves pages 1..3 of two patients each, linked by absolute
// next links.
func threePages(f **fakeFHIR) func(w http.ResponseWriter, r *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("page") {
		case "":
			writeFHIR(w, 200, bundleOf((*f).URL+"/Patient?page=2&_count=2", patientJSON("1"), patientJSON("2")))
		case "2":
			writeFHIR(w, 200, bundleOf((*f).URL+"/Patient?page=3&_count=2", patientJSON("3"), patientJSON("4")))
		case "3":
			writeFHIR(w, 200, bundleOf("", patientJSON("5"), patientJSON("6")))
		default:
			http.Error(w, "no such page", 404)
		}
	}
}

func ids(ps []ehr.Patient) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.ID)
	}
	return strings.Join(s, ",")
}

func TestSearchPatients_FollowsNextLinksAcrossPages(t *testing.T) {
	var f *fakeFHIR
	f, d := newFakeEHR(t, threePages(&f))
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Family: "Doe", Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1,2,3,4,5,6" {
		t.Errorf("ids = %s, want 1..6", ids(got))
	}
	reqs := f.gotRequests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d, want 3", len(reqs))
	}
	if q := reqs[2].URL.Query(); q.Get("page") != "3" || reqs[2].Header.Get("Accept") != "application/fhir+json" {
		t.Errorf("third request = %s, Accept %q", reqs[2].URL, reqs[2].Header.Get("Accept"))
	}
}

func TestSearchPatients_StopsAtMax(t *testing.T) {
	var f *fakeFHIR
	f, d := newFakeEHR(t, threePages(&f))
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Family: "Doe", Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1,2,3" {
		t.Errorf("ids = %s, want 1,2,3", ids(got))
	}
	if n := len(f.got()); n != 2 {
		t.Errorf("requests = %d, want 2 (page 3 not needed)", n)
	}
}

func TestSearchPatients_BoundsThePagesFetched(t *testing.T) {
	var f *fakeFHIR
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		n := len(f.got()) // this request is recorded already
		writeFHIR(w, 200, bundleOf(fmt.Sprintf("%s/Patient?page=%d", f.URL, n+1), patientJSON(fmt.Sprint(n))))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Family: "Doe", Max: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != fhir.MaxPages || len(f.got()) != fhir.MaxPages {
		t.Errorf("patients = %d, requests = %d, want %d each", len(got), len(f.got()), fhir.MaxPages)
	}
}

func TestSearchPatients_StopsOnANextLinkLoop(t *testing.T) {
	var f *fakeFHIR
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf(f.URL+"/Patient?page=1", patientJSON("1")))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 50})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1" || len(f.got()) != 2 {
		t.Errorf("ids = %s, requests = %d; want 1 and 2", ids(got), len(f.got()))
	}
}

func TestSearchPatients_ResolvesARelativeNextLink(t *testing.T) {
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			writeFHIR(w, 200, bundleOf("", patientJSON("2")))
			return
		}
		writeFHIR(w, 200, bundleOf("Patient?page=2", patientJSON("1")))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 50})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1,2" || len(f.got()) != 2 {
		t.Errorf("ids = %s, requests = %d", ids(got), len(f.got()))
	}
}

func TestSearchPatients_RefusesANextLinkToAnotherHost(t *testing.T) {
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf("https://evil.example/Patient?page=2", patientJSON("1")))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 50})
	if err != errOtherHost {
		t.Fatalf("err = %v, want the Doer's refusal unchanged", err)
	}
	if got != nil || len(f.got()) != 1 {
		t.Errorf("patients = %v, requests = %d", got, len(f.got()))
	}
}

func TestSearchPatients_RejectsANextLinkThatIsNotHTTP(t *testing.T) {
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf("file:///etc/passwd", patientJSON("1")))
	})
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 50})
	if e := coreError(t, err); e.Code != "ehr_bad_response" {
		t.Errorf("err = %v, want ehr_bad_response", err)
	}
}

func TestSearchPatients_PassesDoErrorsThrough(t *testing.T) {
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {})
	open := &core.Error{Kind: core.KindUnavailable, Code: "circuit_open", Message: "clinic-a is unavailable"}
	d.err = fmt.Errorf("send: %w", open)
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
	if err != d.err {
		t.Errorf("err = %v, want the Doer's error unchanged", err)
	}
}

func TestSearchPatients_StopsWhenTheContextIsDone(t *testing.T) {
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf("", patientJSON("1")))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fhir.New(d, "").SearchPatients(ctx, ehr.PatientQuery{Max: 5}); err == nil {
		t.Error("no error for a cancelled context")
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := fhir.New(d, "").SearchPatients(ctx, ehr.PatientQuery{Max: 5})
	if e := coreError(t, err); e.Kind != core.KindTimeout || e.Code != "ehr_timeout" || !strings.Contains(e.Message, "clinic-a") {
		t.Errorf("err = %v, want ehr_timeout naming clinic-a", err)
	}
	if n := len(f.got()); n != 0 {
		t.Errorf("requests = %d, want 0", n)
	}
}

func TestSearchPatients_StopsPagingWhenTheContextEndsMidway(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var f *fakeFHIR
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf(f.URL+"/Patient?page=2", patientJSON("1")))
		w.(http.Flusher).Flush()
		cancel()
	})
	_, err := fhir.New(d, "").SearchPatients(ctx, ehr.PatientQuery{Max: 5})
	if err == nil {
		t.Fatal("no error for a search cancelled midway")
	}
	if n := len(f.got()); n != 1 {
		t.Errorf("requests = %d, want 1", n)
	}
}

const outcome400 = `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"invalid",
  "diagnostics":"Invalid date format for parameter birthdate: 1980-13-45"}]}`

const outcome500 = `{"resourceType":"OperationOutcome","issue":[{"severity":"fatal","code":"exception",
  "details":{"text":"Database connection lost"},"diagnostics":"java.sql.SQLException at line 42"},
  {"severity":"warning","code":"processing","details":{"coding":[{"code":"MSG_X","display":"Retry later"}]}}]}`

func TestSearchPatients_ReportsUpstreamErrors(t *testing.T) {
	tests := []struct {
		name         string
		status       int
		header       http.Header
		body         string
		kind         core.Kind
		code         string
		contains     []string
		notContains  []string
		retryAfterAt time.Duration
	}{
		{name: "400 with OperationOutcome", status: 400, body: outcome400,
			kind: core.KindBadGateway, code: "ehr_error",
			contains: []string{"clinic-a", "400", "Invalid date format for parameter birthdate: 1980-13-45"}},
		{name: "500 with OperationOutcome", status: 500, body: outcome500,
			kind: core.KindBadGateway, code: "ehr_error",
			contains: []string{"clinic-a", "500", "Database connection lost", "java.sql.SQLException at line 42", "Retry later"}},
		{name: "500 with a plain body", status: 500, body: "stack trace: password=hunter2",
			kind: core.KindBadGateway, code: "ehr_error",
			contains: []string{"clinic-a", "500"}, notContains: []string{"hunter2"}},
		{name: "401", status: 401, body: `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"login","diagnostics":"token expired"}]}`,
			kind: core.KindBadGateway, code: "ehr_unauthorized", contains: []string{"clinic-a", "401", "token expired"}},
		{name: "403", status: 403, kind: core.KindBadGateway, code: "ehr_unauthorized", contains: []string{"403"}},
		{name: "429", status: 429, header: http.Header{"Retry-After": {"7"}},
			kind: core.KindRateLimited, code: "rate_limited", contains: []string{"clinic-a", "429"}, retryAfterAt: 7 * time.Second},
		{name: "504", status: 504, kind: core.KindTimeout, code: "ehr_timeout", contains: []string{"clinic-a", "504"}},
		{name: "408", status: 408, kind: core.KindTimeout, code: "ehr_timeout", contains: []string{"408"}},
		{name: "404", status: 404, kind: core.KindBadGateway, code: "ehr_error", contains: []string{"404"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header()[k] = v
				}
				writeFHIR(w, tt.status, tt.body)
			})
			got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Family: "x", Max: 5})
			if got != nil {
				t.Errorf("patients = %v, want nil", got)
			}
			e := coreError(t, err)
			if e.Kind != tt.kind || e.Code != tt.code {
				t.Errorf("kind, code = %v, %q; want %v, %q", e.Kind, e.Code, tt.kind, tt.code)
			}
			for _, s := range tt.contains {
				if !strings.Contains(e.Message, s) {
					t.Errorf("message %q lacks %q", e.Message, s)
				}
			}
			for _, s := range tt.notContains {
				if strings.Contains(e.Error(), s) {
					t.Errorf("error %q shows %q", e.Error(), s)
				}
			}
			if e.RetryAfter != tt.retryAfterAt {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfterAt)
			}
		})
	}
}

func TestSearchPatients_ClipsLongDiagnostics(t *testing.T) {
	long := strings.Repeat("é", 1000)
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 422, `{"resourceType":"OperationOutcome","issue":[{"diagnostics":"line1\nline2\u0000 `+long+`"}]}`)
	})
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
	e := coreError(t, err)
	if len(e.Message) > 400 || !strings.Contains(e.Message, "line1 line2 é") || strings.ContainsAny(e.Message, "\n\x00") {
		t.Errorf("message (%d bytes) = %q", len(e.Message), e.Message)
	}
}

func TestSearchPatients_RejectsBadAnswers(t *testing.T) {
	tests := []struct {
		name, body, contains string
	}{
		{"malformed JSON", `{"resourceType":"Bundle","entry":[`, "not valid JSON"},
		{"HTML", `<html>maintenance</html>`, "not valid JSON"},
		{"empty body", ``, "not valid JSON"},
		{"JSON array", `[1,2]`, "not a FHIR resource"},
		{"no resourceType", `{"entry":[]}`, "not a FHIR resource"},
		{"a Patient instead of a Bundle", patientJSON("1"), "it is a Patient, not a Bundle"},
		{"an OperationOutcome with 200", outcome400, "Invalid date format"},
		{"a malformed Bundle", `{"resourceType":"Bundle","entry":{"resource":{}}}`, "Bundle is malformed"},
		{"a malformed Patient", bundleOf("", `{"resourceType":"Patient","id":"1","name":"Doe"}`), "entry 0 is not a valid Patient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
				writeFHIR(w, 200, tt.body)
			})
			_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
			e := coreError(t, err)
			if e.Kind != core.KindBadGateway || e.Code != "ehr_bad_response" {
				t.Errorf("kind, code = %v, %q; want bad gateway, ehr_bad_response", e.Kind, e.Code)
			}
			if !strings.Contains(e.Message, "clinic-a") || !strings.Contains(e.Message, tt.contains) {
				t.Errorf("message %q lacks clinic-a or %q", e.Message, tt.contains)
			}
		})
	}
}

func TestSearchPatients_RejectsAnOversizedAnswer(t *testing.T) {
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/fhir+json")
		fmt.Fprint(w, `{"resourceType":"Bundle","entry":[]`)
		chunk := strings.Repeat(" ", 1<<20)
		for range 11 {
			if _, err := fmt.Fprint(w, chunk); err != nil {
				return
			}
		}
		fmt.Fprint(w, `}`)
	})
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
	if e := coreError(t, err); e.Code != "ehr_bad_response" || !strings.Contains(e.Message, "10 MiB") {
		t.Errorf("err = %v, want ehr_bad_response about the size", err)
	}
}

func TestSearchPatients_EmptyBundleIsAnEmptyResult(t *testing.T) {
	for _, body := range []string{
		`{"resourceType":"Bundle","type":"searchset","total":0}`,
		bundleOf(""),
		bundleOf("", `{"resourceType":"OperationOutcome","issue":[{"severity":"information","code":"informational","diagnostics":"no match"}]}`),
	} {
		_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
			writeFHIR(w, 200, body)
		})
		got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("body %s: patients = %#v, err = %v; want an empty slice", body, got, err)
		}
	}
}

const richPatient = `{
  "resourceType": "Patient",
  "id": "pat-1",
  "meta": {"versionId": "3", "lastUpdated": "2024-05-06T07:08:09.123+02:00"},
  "identifier": [
    {"use": "usual", "type": {"coding": [{"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": "MR", "display": "Medical record number"}], "text": "MRN"},
     "system": "urn:oid:1.2.36.146.595.217.0.1", "value": "12345"},
    {"type": {"text": "Driver's license"}, "system": "urn:dl", "value": "D-1"},
    {"system": "http://hl7.org/fhir/sid/us-ssn", "value": "999-99-9999"},
    {"system": "urn:empty"}
  ],
  "name": [
    {"use": "usual", "given": ["Jim"]},
    {"use": "official", "family": "Chalmers", "given": ["Peter", null, " James "], "_given": [{}, {"extension": []}, {}]},
    {"use": "maiden", "family": "Windsor", "given": ["Peter"], "period": {"end": "2002"}}
  ],
  "telecom": [
    {"use": "home"},
    {"system": "phone", "value": "(03) 5555 6473", "use": "work", "rank": 1},
    {"system": "email", "value": "p.chalmers@example.org"}
  ],
  "gender": "male",
  "birthDate": "1974-12-25",
  "_birthDate": {"extension": [{"url": "http://hl7.org/fhir/StructureDefinition/patient-birthTime", "valueDateTime": "1974-12-25T14:35:45-05:00"}]},
  "deceasedBoolean": false,
  "address": [
    {"use": "home", "type": "both", "text": "534 Erewhon St PeasantVille, Rainbow, Vic  3999",
     "line": ["534 Erewhon St", "Apt 2"], "city": "PleasantVille", "district": "Rainbow", "state": "Vic", "postalCode": "3999", "country": "AU"},
    {"use": "old", "city": "Melbourne"},
    {"use": "temp"}
  ],
  "contact": [{"name": {"family": "du Marché", "given": ["Bénédicte"]}}]
}`

func TestSearchPatients_ConvertsPatients(t *testing.T) {
	minimal := `{"resourceType":"Patient","id":"pat-2"}`
	nameless := `{"resourceType":"Patient","id":"pat-3","name":[{"use":"old","family":"Old"},{"text":"  Ana   María López "}],
	  "gender":"FEMALE","birthDate":"1980-02","meta":{"lastUpdated":"yesterday"}}`
	practitioner := `{"resourceType":"Practitioner","id":"dr-1","name":[{"family":"Who"}]}`
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		writeFHIR(w, 200, bundleOf("", richPatient, practitioner, minimal, nameless,
			`{"resourceType":"OperationOutcome","issue":[{"severity":"warning","code":"processing","diagnostics":"partial"}]}`))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	want := []ehr.Patient{
		{
			ID:        "pat-1",
			Source:    "clinic-a",
			Name:      ehr.HumanName{Family: "Chalmers", Given: []string{"Peter", "James"}, Text: "Peter James Chalmers"},
			BirthDate: "1974-12-25",
			Gender:    "male",
			Identifiers: []ehr.Identifier{
				{System: "urn:oid:1.2.36.146.595.217.0.1", Value: "12345", Type: "MR"},
				{System: "urn:dl", Value: "D-1", Type: "Driver's license"},
				{System: "http://hl7.org/fhir/sid/us-ssn", Value: "999-99-9999"},
			},
			Telecom: []ehr.ContactPoint{
				{System: "phone", Value: "(03) 5555 6473", Use: "work"},
				{System: "email", Value: "p.chalmers@example.org"},
			},
			Address: []ehr.Address{
				{Line: []string{"534 Erewhon St", "Apt 2"}, City: "PleasantVille", State: "Vic", PostalCode: "3999", Country: "AU"},
				{City: "Melbourne"},
			},
			LastUpdated: time.Date(2024, 5, 6, 5, 8, 9, 123e6, time.UTC),
		},
		{ID: "pat-2", Source: "clinic-a"},
		{ID: "pat-3", Source: "clinic-a", Name: ehr.HumanName{Text: "Ana María López"}, Gender: "female", BirthDate: "1980-02"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("patients =\n%#v\nwant\n%#v", got, want)
	}
}

func TestSearchPatients_SkipsARecordSeenOnAnEarlierPage(t *testing.T) {
	var f *fakeFHIR
	f, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("page") == "2" {
			writeFHIR(w, 200, bundleOf("", patientJSON("2"), patientJSON("3")))
			return
		}
		writeFHIR(w, 200, bundleOf(f.URL+"/Patient?page=2", patientJSON("1"), patientJSON("2")))
	})
	got, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if ids(got) != "1,2,3" {
		t.Errorf("ids = %s, want 1,2,3", ids(got))
	}
}

func TestSearchPatients_ReportsADroppedConnection(t *testing.T) {
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		fmt.Fprint(w, `{"resourceType":"Bundle",`)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
	if e := coreError(t, err); e.Kind != core.KindBadGateway || e.Code != "ehr_error" || !strings.Contains(e.Message, "clinic-a") {
		t.Errorf("err = %v, want ehr_error naming clinic-a", err)
	}
}

func TestSearchPatients_ReportsTheStatusOfAnOversizedErrorBody(t *testing.T) {
	_, d := newFakeEHR(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(503)
		fmt.Fprint(w, strings.Repeat("x", 2<<20))
	})
	_, err := fhir.New(d, "").SearchPatients(context.Background(), ehr.PatientQuery{Max: 5})
	if e := coreError(t, err); e.Code != "ehr_error" || e.Message != "clinic-a answered HTTP 503" {
		t.Errorf("err = %v, want ehr_error with the bare status", err)
	}
}
