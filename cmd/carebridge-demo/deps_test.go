package main

import (
	"os/exec"
	"strings"
	"testing"
)

// Nothing a command ships links test code: not the testing package (nor
// its subpackages, nor net/http/httptest), and no package under test/.
// The demo's fake EHRs are plain server packages the tests wrap, not the
// reverse.
func TestShippedCommandsLinkNoTestCode(t *testing.T) {
	const module = "github.com/carebridge/carebridge"
	out, err := exec.Command("go", "list", "-deps", module+"/cmd/...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps %s/cmd/...: %v\n%s", module, err, stderr)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	for _, p := range deps {
		if p == "testing" || strings.HasPrefix(p, "testing/") || p == "net/http/httptest" ||
			p == module+"/test" || strings.HasPrefix(p, module+"/test/") {
			t.Errorf("a command links %s", p)
		}
	}
}
