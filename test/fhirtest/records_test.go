package fhirtest_test

import (
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// The record search contract against Medplum, one server for every subtest
// (each seeds its own people), pages of pageSize.
func TestIntegrationFHIRRecords_Contract(t *testing.T) {
	srv := fhirtest.Start(t, fhirtest.WithAPIKey(testAPIKey), fhirtest.WithMaxCount(pageSize), fhirtest.WithRequestLog())
	c := fhir.New(newEHRClient(t, srv.URL(), testAPIKey), "")
	ehrtest.TestRecordSearcher(t, func(*testing.T) ehrtest.RecordBackend {
		return ehrtest.RecordBackend{
			Searcher:   c,
			AddPatient: func(t *testing.T) string { return srv.CreatePatient(t, usCorePatient()) },
			AddRecords: func(t *testing.T, seeds []ehrtest.SeedRecord) []string { return srv.AddRecords(t, seeds) },
		}
	})
}

// usCorePatient is a Patient with the elements US Core requires
// (identifier, name, gender).
func usCorePatient() map[string]any {
	return map[string]any{
		"meta":       map[string]any{"profile": []any{"http://hl7.org/fhir/us/core/StructureDefinition/us-core-patient"}},
		"identifier": []any{map[string]any{"system": mrnSystem, "value": "MRN-" + ehrtest.NewID()}},
		"name":       []any{map[string]any{"family": "Okonkwo", "given": []any{"Amara"}}},
		"gender":     "female",
		"birthDate":  "1981-04-12",
	}
}
