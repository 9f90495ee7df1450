// Package fhirtest starts the real FHIR R4 server of
// adapters/ehr/fhir/fhirserver (Medplum's in-memory server) for a test,
// with helpers that fail the test instead of returning errors.
//
// The npm packages come from the directory in the environment variable
// MEDPLUM_DIR (`make test` sets it from scripts/install-medplum.sh); without
// it the test is skipped, or fails when CI is set.
//
//	srv := fhirtest.Start(t, fhirtest.WithAPIKey("k"))
//	id := srv.CreatePatient(t, map[string]any{"name": []any{map[string]any{"family": "Doe"}}})
//	base := srv.URL() // http://127.0.0.1:PORT/fhir
package fhirtest

import (
	"os"
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/fhir/fhirserver"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/ehr/ehrtest"
	"github.com/carebridge/carebridge/test/testenv"
)

// EnvDir names the environment variable that holds the install directory
// (with node_modules) printed by scripts/install-medplum.sh.
const EnvDir = fhirserver.EnvDir

// ScaleName is a name filter of SeedScale's practitioners (Scale.Named).
const ScaleName = fhirserver.ScaleName

// Option configures Start (see fhirserver's options).
type Option = fhirserver.Option

// The options of fhirserver.
var (
	WithAPIKey        = fhirserver.WithAPIKey
	WithBearerToken   = fhirserver.WithBearerToken
	WithDefaultCount  = fhirserver.WithDefaultCount
	WithMaxCount      = fhirserver.WithMaxCount
	WithoutValidation = fhirserver.WithoutValidation
	WithRequestLog    = fhirserver.WithRequestLog
)

// Server is a running FHIR server with test helpers. It is stopped when
// the test ends.
type Server struct {
	*fhirserver.Server
}

// Start starts a new in-memory FHIR server on a free 127.0.0.1 port, waits
// until it listens, and stops it (the whole process group) when the test
// ends. Every call starts a new, empty server.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	dir := os.Getenv(EnvDir)
	if dir == "" {
		testenv.Missing(t, "FHIR server: "+EnvDir+" not set", "run make test, which installs it (scripts/install-medplum.sh)")
	}
	s, err := fhirserver.Start(t.Context(), dir, t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("fhirtest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("fhirtest: stop the FHIR server: %v\n%s", err, s.Output())
		} else if t.Failed() && s.LogsRequests() {
			t.Logf("fhirtest: FHIR server output:\n%s", s.Output())
		}
	})
	return &Server{s}
}

// CreatePatient creates a Patient from the given JSON object (resourceType
// may be left out) and returns its server-assigned id.
func (s *Server) CreatePatient(t testing.TB, patient map[string]any) string {
	t.Helper()
	r := make(map[string]any, len(patient)+1)
	for k, v := range patient {
		r[k] = v
	}
	r["resourceType"] = "Patient"
	return s.Create(t, r)["id"].(string)
}

// Create creates resource (a FHIR JSON object with resourceType) with a
// POST to its type and returns the stored resource, with its id and meta.
// It fails the test on anything but 201 Created.
func (s *Server) Create(t testing.TB, resource map[string]any) map[string]any {
	t.Helper()
	created, err := s.Post(resource)
	return must(t, created, err)
}

// Update changes a stored resource (with its resourceType and id) with a
// PUT, as the EHR's own screens would, and returns it as stored, with its
// new meta. It fails the test on anything but 200 OK.
func (s *Server) Update(t testing.TB, resource map[string]any) map[string]any {
	t.Helper()
	updated, err := s.Put(resource)
	return must(t, updated, err)
}

// Seed creates resource like Create but keeps the meta.lastUpdated (and
// meta.versionId) it carries, so tests can lay out _lastUpdated ranges.
func (s *Server) Seed(t testing.TB, resource map[string]any) map[string]any {
	t.Helper()
	created, err := s.PostWithMeta(resource)
	return must(t, created, err)
}

// Get sends an authenticated GET for path (relative to the FHIR base, e.g.
// "Patient?family=doe") and returns the status and decoded JSON body.
func (s *Server) Get(t testing.TB, path string) (int, map[string]any) {
	t.Helper()
	status, m, err := s.GetJSON(path)
	if err != nil {
		t.Fatalf("fhirtest: %v", err)
	}
	return status, m
}

// AddAgent seeds an agent the way an EHR holds one (see
// fhirserver.Server.PostAgent) and returns the Practitioner's id.
func (s *Server) AddAgent(t testing.TB, a ehr.Agent, free []ehr.Period) string {
	t.Helper()
	id, err := s.PostAgent(a, free)
	return must(t, id, err)
}

func must[T any](t testing.TB, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("fhirtest: %v", err)
	}
	return v
}

// RecordResource is the US Core-shaped resource of seed (see
// fhirserver.RecordResource): its date in the element seed.DatedBy names,
// a DocumentReference's content as its attachment's data and url.
func RecordResource(seed ehrtest.SeedRecord) map[string]any {
	dating := fhirserver.DateMain
	switch seed.DatedBy {
	case ehrtest.DatedByPeriod:
		dating = fhirserver.DatePeriod
	case ehrtest.DatedByFallback:
		dating = fhirserver.DateFallback
	}
	return fhirserver.RecordResource(seed.Record, dating, seed.Content)
}

// AddRecords creates the resources of seeds (RecordResource) in batches
// and returns their ids in order.
func (s *Server) AddRecords(t testing.TB, seeds []ehrtest.SeedRecord) []string {
	t.Helper()
	res := make([]map[string]any, len(seeds))
	for i, sd := range seeds {
		if res[i] = RecordResource(sd); res[i] == nil {
			t.Fatalf("fhirtest: no resource for a record of type %q", sd.Type)
		}
	}
	ids, err := s.Batch(res)
	return must(t, ids, err)
}
