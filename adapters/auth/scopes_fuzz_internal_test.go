package auth

import (
	"encoding/json"
	"testing"
)

// FuzzScopes: any JSON in the scope and scp claims gives scopes or none,
// never a panic, and only a string or an array of strings gives any.
func FuzzScopes(f *testing.F) {
	for _, c := range [][2]string{{`"user/Patient.rs openid"`, ``}, {`["user/Patient.rs"]`, `"patient/Appointment.c"`},
		{`42`, `["user/Patient.rs"]`}, {`{"a":1}`, `null`}, {`["x", 1]`, ``}, {`"`, `[`}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, scope, scp string) {
		got := scopes(json.RawMessage(scope), json.RawMessage(scp))
		if len(got) == 0 {
			return
		}
		for _, c := range []string{scope, scp} {
			if c == "" || c == "null" {
				continue
			}
			var one string
			var many []string
			if json.Unmarshal([]byte(c), &one) != nil && json.Unmarshal([]byte(c), &many) != nil {
				t.Fatalf("claim %q is neither a string nor an array of strings, yet gave scopes %+v", c, got)
			}
		}
	})
}
