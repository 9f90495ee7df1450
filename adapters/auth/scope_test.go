package auth_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/test/oidctest"
)

// The scope and scp claims become the actor's scopes; a claim of the wrong
// shape gives a token with no scopes, never an error.
func TestAuthenticate_ReadsScopes(t *testing.T) {
	iss := oidctest.New(t)
	v := newOIDC(t, iss)
	staff := []core.Scope{{Context: "user", Resource: "Patient", Perms: "rs"}}
	both := append(staff, core.Scope{Context: "patient", Resource: "Appointment", Perms: "cs"})
	for _, tt := range []struct {
		name   string
		claims map[string]any
		want   []core.Scope
	}{
		{"scope string", map[string]any{"scope": "openid user/Patient.rs"}, staff},
		{"scope array", map[string]any{"scope": []string{"user/Patient.rs", "profile"}}, staff},
		{"scp array", map[string]any{"scp": []string{"user/Patient.read"}}, staff},
		{"scp string", map[string]any{"scp": "user/Patient.rs"}, staff},
		{"both claims count", map[string]any{"scope": "user/Patient.rs", "scp": []string{"patient/Appointment.cs"}}, both},
		{"no claim", map[string]any{}, nil},
		{"null claim", map[string]any{"scope": nil}, nil},
		{"unknown scopes ignored", map[string]any{"scope": "openid fhirUser launch"}, nil},
		{"scope a number", map[string]any{"scope": 42}, nil},
		{"scope an object", map[string]any{"scope": map[string]any{"user/Patient.rs": true}}, nil},
		{"scp array with a number", map[string]any{"scp": []any{"user/Patient.rs", 7}}, nil},
		{"a bad claim voids the good one", map[string]any{"scope": "user/Patient.rs", "scp": true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := iss.Claims("user-1", audience, time.Hour)
			for k, val := range tt.claims {
				c[k] = val
			}
			tok := iss.Sign(t, c)
			for range 2 { // the second answer comes from the token cache
				actor, err := v.Authenticate(context.Background(), tok)
				if err != nil {
					t.Fatalf("Authenticate: %v", err)
				}
				if actor.Subject != "user-1" || !reflect.DeepEqual(actor.Scopes, tt.want) {
					t.Fatalf("actor = %+v, want scopes %+v", actor, tt.want)
				}
			}
		})
	}
}
