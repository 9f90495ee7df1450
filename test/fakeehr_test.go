package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEHR is a FHIR R4 server that knows a few patients and their
// clinical records: it answers GET /fhir/Patient with a search Bundle of
// every patient, and GET /fhir/<Type>?patient=<id> with that patient's
// records of the type (unpaged; the date parameters are ignored, as a
// server may), after an optional delay, or fails with a status. It
// requires the API key "key-<name>".
type fakeEHR struct {
	name     string
	srv      *httptest.Server
	calls    atomic.Int64
	delay    atomic.Int64 // nanoseconds
	status   atomic.Int64 // non-zero: answer with this status
	patients []map[string]any
	records  atomic.Pointer[[]map[string]any]
	// noRecords makes it answer 404 to every search but Patient's, as a
	// server that cannot search clinical types does.
	noRecords atomic.Bool
	// traceparent is the traceparent header of the last request ("" for
	// none).
	traceparent atomic.Pointer[string]
}

// holdRecords gives f the clinical records it serves.
func (f *fakeEHR) holdRecords(records ...map[string]any) { f.records.Store(&records) }

func newFakeEHR(t *testing.T, name string, patients ...map[string]any) *fakeEHR {
	t.Helper()
	f := &fakeEHR{name: name, patients: patients}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		typ, ok := strings.CutPrefix(r.URL.Path, "/fhir/")
		if !ok || strings.Contains(typ, "/") {
			http.NotFound(w, r)
			return
		}
		f.calls.Add(1)
		tp := r.Header.Get("traceparent")
		f.traceparent.Store(&tp)
		if r.Header.Get("X-API-Key") != "key-"+name {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		select {
		case <-time.After(time.Duration(f.delay.Load())):
		case <-r.Context().Done():
			return
		}
		st := f.status.Load()
		if typ != "Patient" && f.noRecords.Load() {
			st = http.StatusNotFound
		}
		if st != 0 {
			w.Header().Set("Content-Type", "application/fhir+json")
			w.WriteHeader(int(st))
			fmt.Fprintf(w, `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"exception","diagnostics":"%s is down for maintenance"}]}`, name)
			return
		}
		var entries []map[string]any
		for _, res := range f.resources(typ, r.URL.Query().Get("patient")) {
			entries = append(entries, map[string]any{"resource": res, "search": map[string]any{"mode": "match"}})
		}
		w.Header().Set("Content-Type", "application/fhir+json")
		json.NewEncoder(w).Encode(map[string]any{"resourceType": "Bundle", "type": "searchset", "total": len(entries), "entry": entries})
	}))
	t.Cleanup(func() {
		f.srv.CloseClientConnections() // the app keeps idle connections open
		f.srv.Close()
	})
	return f
}

// resources are f's resources of typ: every patient, or patient's records.
func (f *fakeEHR) resources(typ, patient string) []map[string]any {
	if typ == "Patient" {
		return f.patients
	}
	var out []map[string]any
	if all := f.records.Load(); all != nil {
		for _, rec := range *all {
			if rec["resourceType"] == typ && subjectOf(rec) == "Patient/"+patient {
				out = append(out, rec)
			}
		}
	}
	return out
}

// subjectOf is the reference to the patient a record belongs to.
func subjectOf(rec map[string]any) string {
	for _, k := range []string{"subject", "patient"} {
		if ref, ok := rec[k].(map[string]any); ok {
			s, _ := ref["reference"].(string)
			return s
		}
	}
	return ""
}

// fhirObservation is a LOINC-coded laboratory Observation of patient
// with a quantity value.
func fhirObservation(id, patient, effective, code, display, value, unit string) map[string]any {
	return map[string]any{
		"resourceType": "Observation", "id": id, "status": "final",
		"meta":              map[string]any{"lastUpdated": "2024-05-01T10:00:00Z"},
		"category":          []any{map[string]any{"coding": []any{map[string]any{"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": "laboratory"}}}},
		"code":              map[string]any{"coding": []any{map[string]any{"system": "http://loinc.org", "code": code, "display": display}}, "text": display},
		"subject":           map[string]any{"reference": "Patient/" + patient},
		"effectiveDateTime": effective,
		"valueQuantity":     map[string]any{"value": json.Number(value), "unit": unit, "system": "http://unitsofmeasure.org", "code": unit},
	}
}

// fhirPatient is a Patient resource with an MRN.
func fhirPatient(id, family, given, birth, mrn string) map[string]any {
	return map[string]any{
		"resourceType": "Patient", "id": id,
		"meta":      map[string]any{"lastUpdated": "2024-05-01T10:00:00Z"},
		"name":      []any{map[string]any{"use": "official", "family": family, "given": []any{given}}},
		"birthDate": birth, "gender": "female",
		"identifier": []any{map[string]any{"system": "urn:oid:2.16.840.1.113883.19.5", "value": mrn,
			"type": map[string]any{"coding": []any{map[string]any{"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": "MR"}}}}},
		"telecom": []any{map[string]any{"system": "phone", "value": "+1 512 555 0100", "use": "home"}},
		"address": []any{map[string]any{"line": []any{"1 Main St"}, "city": "Austin", "state": "TX", "postalCode": "78701", "country": "US"}},
	}
}
