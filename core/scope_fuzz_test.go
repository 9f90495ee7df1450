package core_test

import (
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core"
)

// FuzzParseScope: any claim text parses without panicking, and what it
// accepts is a well-formed SMART v2 scope that parses to itself again.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"user/Patient.rs", "system/*.cruds", "patient/Appointment.read", "user/Patient.*",
		"user/Observation.rs?category=x", "openid", "launch/patient", "user/.rs", "user/Patient.sr", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		s, ok := core.ParseScope(raw)
		if !ok {
			if s != (core.Scope{}) {
				t.Fatalf("refused %q but returned %+v", raw, s)
			}
			return
		}
		if s.Context != core.ContextPatient && s.Context != core.ContextUser && s.Context != core.ContextSystem {
			t.Fatalf("%q: context %q", raw, s.Context)
		}
		if s.Perms == "" || strings.Trim(s.Perms, "cruds") != "" {
			t.Fatalf("%q: permissions %q", raw, s.Perms)
		}
		again, ok := core.ParseScope(s.String())
		if !ok || again != s {
			t.Fatalf("%q → %q → %+v, %v", raw, s.String(), again, ok)
		}
		if got := core.ParseScopes(raw + " " + raw); len(got) != 2 || got[0] != s {
			t.Fatalf("ParseScopes(%q twice) = %+v", raw, got)
		}
	})
}
