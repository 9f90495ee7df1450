package test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/carebridge/carebridge/"

// The dependency rules of docs/architecture.md, checked on what
// each package imports outside its tests. A package may import the standard
// library and third-party modules; of this module, what allowed says.
func TestLayering_PackagesImportOnlyWhatTheArchitectureAllows(t *testing.T) {
	imports := moduleImports(t)
	if len(imports["app"]) == 0 || len(imports["adapters/httpapi"]) == 0 {
		t.Fatalf("go list found too little: %v", imports)
	}
	for pkg, deps := range imports {
		for _, dep := range deps {
			if !allowed(pkg, dep) {
				t.Errorf("%s imports %s", pkg, dep)
			}
		}
	}
}

// TestLayering_RulesRefuseWhatTheyShould keeps allowed from passing
// everything.
func TestLayering_RulesRefuseWhatTheyShould(t *testing.T) {
	for _, c := range [][2]string{
		{"core", "core/ehr"},
		{"core/ehr", "core/event"},
		{"core/ehr", "core/business"},
		{"core/business", "adapters/postgres"},
		{"ports", "adapters/httpapi"},
		{"adapters/postgres", "app"},
		{"adapters/postgres", "adapters/s3"},
		{"adapters/httpapi", "test/pgtest"},
		{"app", "cmd/carebridge"},
		{"cmd/carebridge", "test/pgtest"},
		{"core/ehr", "testing"},
	} {
		if allowed(c[0], c[1]) {
			t.Errorf("allowed(%q, %q) = true, want false", c[0], c[1])
		}
	}
	for _, c := range [][2]string{
		{"core/storage", "core/storage/segcrypt"},
		{"core/ehr", "core"},
		{"core/ehr/ehrtest", "testing"},
		{"adapters/httpapi", "ports"},
		{"adapters/ehr/fhir", "adapters/ehr/ehrhttp"},
		{"app", "adapters/postgres"},
		{"cmd/carebridge", "app"},
	} {
		if !allowed(c[0], c[1]) {
			t.Errorf("allowed(%q, %q) = false, want true", c[0], c[1])
		}
	}
}

// allowed says whether pkg may import dep (both relative to the module;
// dep "testing" stands for the standard testing packages).
func allowed(pkg, dep string) bool {
	switch {
	case dep == "testing":
		// Only contract suites and test helpers (xxxtest packages).
		return strings.HasSuffix(pkg, "test") || strings.HasPrefix(pkg, "test/")
	case pkg == "core":
		return false
	case under(pkg, "core"):
		// A core: core itself and its own subpackages, never another core.
		own := "core/" + strings.Split(pkg, "/")[1]
		return dep == "core" || under(dep, own)
	case pkg == "ports":
		return dep == "core" || under(dep, "core")
	case under(pkg, "adapters"):
		// The EHR adapters share their HTTP client; no other adapter
		// imports another.
		return dep == "core" || under(dep, "core") || dep == "ports" || dep == "migrations" ||
			(under(pkg, "adapters/ehr") && under(dep, "adapters/ehr"))
	case pkg == "app":
		return !under(dep, "cmd") && !under(dep, "test")
	case under(pkg, "cmd"):
		return !under(dep, "test")
	}
	return true // test/...: anything
}

func under(pkg, root string) bool { return pkg == root || strings.HasPrefix(pkg, root+"/") }

// moduleImports lists each package's non-test imports of this module (and
// of testing) by go list.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list: %v\n%s", err, stderr)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		imports[pkg] = nil
		for _, dep := range fields[1:] {
			switch {
			case dep == "testing" || strings.HasPrefix(dep, "testing/") || dep == "net/http/httptest":
				imports[pkg] = append(imports[pkg], "testing")
			case strings.HasPrefix(dep, module):
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(dep, module))
			}
		}
	}
	return imports
}
