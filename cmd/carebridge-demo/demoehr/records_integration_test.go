package demoehr

import (
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// recordDateParams are the date parameters the FHIR adapter sends, for
// the types where they cover the clinical date (fhir.recordDateParam).
var recordDateParams = map[ehr.ClinicalType]string{
	ehr.TypeEncounter: "date", ehr.TypeImmunization: "date", ehr.TypeProcedure: "date",
	ehr.TypeMedicationRequest: "authoredon",
}

// The demo's FHIR records are valid R4 (the server validates each one it
// creates; the demo seeds them in batches, which it does not), and the
// server finds them as the adapter asks: by patient, and by the type's
// date parameter where the adapter sends one.
func TestIntegrationDemoFHIRRecords_AreValidAndFoundByPatientAndDate(t *testing.T) {
	srv := fhirtest.Start(t)
	id := srv.CreatePatient(t, fhirPatient(person(botFrom)))
	other := srv.CreatePatient(t, fhirPatient(person(0)))
	today := time.Now()
	fhir, _ := recordsOf(botFrom, today)
	for _, r := range fhir {
		if _, err := srv.Post(fhirRecord(r, id)); err != nil {
			t.Fatalf("%s is not accepted: %v", r.ID, err)
		}
	}
	for _, typ := range ehr.ClinicalTypes {
		if got := searchCount(t, srv, typ, url.Values{"patient": {id}}); got != countType(fhir, typ) {
			t.Fatalf("%s of the patient: %d, want %d", typ, got, countType(fhir, typ))
		}
		if got := searchCount(t, srv, typ, url.Values{"patient": {other}}); got != 0 {
			t.Fatalf("%s of another patient: %d", typ, got)
		}
		param, ok := recordDateParams[typ]
		if !ok {
			continue
		}
		newest := fhir[slices.IndexFunc(fhir, func(r ehr.Record) bool { return r.Type == typ })] // newest first
		day, _ := time.Parse(time.DateOnly, newest.Date[:len(time.DateOnly)])
		around := url.Values{"patient": {id}, param: {"ge" + day.AddDate(0, 0, -1).Format(time.DateOnly), "le" + day.AddDate(0, 0, 1).Format(time.DateOnly)}}
		if got := searchCount(t, srv, typ, around); got != 1 {
			t.Fatalf("%s around %s by %s: %d, want 1", typ, newest.Date, param, got)
		}
		after := url.Values{"patient": {id}, param: {"ge" + today.AddDate(0, 0, 1).Format(time.DateOnly)}}
		if got := searchCount(t, srv, typ, after); got != 0 {
			t.Fatalf("%s after today by %s: %d", typ, param, got)
		}
	}
}

// searchCount is how many resources of type t the search q finds (one page
// of up to 100).
func searchCount(t *testing.T, srv *fhirtest.Server, typ ehr.ClinicalType, q url.Values) int {
	t.Helper()
	q.Set("_count", "100")
	status, bundle := srv.Get(t, fmt.Sprintf("%s?%s", typ, q.Encode()))
	entries, _ := bundle["entry"].([]any)
	if status != 200 || bundle["resourceType"] != "Bundle" {
		t.Fatalf("%s?%s: %d %v", typ, q.Encode(), status, bundle)
	}
	return len(entries)
}
