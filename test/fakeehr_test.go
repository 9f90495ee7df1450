package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// fakeEHR is a FHIR R4 server that knows a few patients: it answers
// GET /fhir/Patient with a search Bundle, after an optional delay, or fails
// with a status. It requires the API key "key-<name>".
type fakeEHR struct {
	name     string
	srv      *httptest.Server
	calls    atomic.Int64
	delay    atomic.Int64 // nanoseconds
	status   atomic.Int64 // non-zero: answer with this status
	patients []map[string]any
}

func newFakeEHR(t *testing.T, name string, patients ...map[string]any) *fakeEHR {
	t.Helper()
	f := &fakeEHR{name: name, patients: patients}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/fhir/Patient" {
			http.NotFound(w, r)
			return
		}
		f.calls.Add(1)
		if r.Header.Get("X-API-Key") != "key-"+name {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		select {
		case <-time.After(time.Duration(f.delay.Load())):
		case <-r.Context().Done():
			return
		}
		if st := f.status.Load(); st != 0 {
			w.Header().Set("Content-Type", "application/fhir+json")
			w.WriteHeader(int(st))
			fmt.Fprintf(w, `{"resourceType":"OperationOutcome","issue":[{"severity":"error","code":"exception","diagnostics":"%s is down for maintenance"}]}`, name)
			return
		}
		var entries []map[string]any
		for _, p := range f.patients {
			entries = append(entries, map[string]any{"resource": p, "search": map[string]any{"mode": "match"}})
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
