// Package testenv decides what a test does when a service it needs is
// missing: with CI set (.ci/run sets it) the test fails, so a run that
// lacks PostgreSQL, Redis, the S3 server, the FHIR server or the browser
// cannot pass by skipping; without CI it is skipped, saying what to run.
package testenv

import (
	"os"
	"testing"
)

// EnvCI names the environment variable that turns a missing service into a
// failure.
const EnvCI = "CI"

// Missing ends the test because what is missing: it fails when CI is set
// and skips otherwise, in both cases saying how to get it (howToGetIt, e.g.
// "run make test, which installs it").
func Missing(t testing.TB, what, howToGetIt string) {
	t.Helper()
	if os.Getenv(EnvCI) != "" {
		t.Fatalf("%s (%s is set, so this fails rather than skips): %s", what, EnvCI, howToGetIt)
	}
	t.Skipf("%s: %s", what, howToGetIt)
}
