package core_test

import (
	"reflect"
	"testing"

	"github.com/carebridge/carebridge/core"
)

func TestParseScope(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		want core.Scope
		ok   bool
	}{
		{"user/Patient.rs", core.Scope{"user", "Patient", "rs"}, true},
		{"system/*.cruds", core.Scope{"system", "*", "cruds"}, true},
		{"patient/Appointment.c", core.Scope{"patient", "Appointment", "c"}, true},
		{"patient/Appointment.cus", core.Scope{"patient", "Appointment", "cus"}, true},
		// SMART v1 aliases.
		{"user/Patient.read", core.Scope{"user", "Patient", "rs"}, true},
		{"user/Appointment.write", core.Scope{"user", "Appointment", "cud"}, true},
		{"system/Patient.*", core.Scope{"system", "Patient", "cruds"}, true},
		// Not SMART scopes, or malformed: ignored.
		{"openid", core.Scope{}, false},
		{"fhirUser", core.Scope{}, false},
		{"launch/patient", core.Scope{}, false},
		{"admin/Patient.rs", core.Scope{}, false},
		{"User/Patient.rs", core.Scope{}, false},
		{"user/patient.rs", core.Scope{}, false},
		{"user/Patient.sr", core.Scope{}, false},     // out of order
		{"user/Patient.rrs", core.Scope{}, false},    // repeated
		{"user/Patient.x", core.Scope{}, false},      // unknown permission
		{"user/Patient.", core.Scope{}, false},       // none
		{"user/.rs", core.Scope{}, false},            // no resource
		{"user/Patient", core.Scope{}, false},        // no permissions
		{"user/Pat-ient.rs", core.Scope{}, false},    // not a type name
		{"user/Patient.rs?x=1", core.Scope{}, false}, // narrowed: not the whole grant
		{"user/Observation.rs?code=http://loinc.org|1", core.Scope{}, false},
		{"", core.Scope{}, false},
	} {
		got, ok := core.ParseScope(tt.raw)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseScope(%q) = %+v, %v; want %+v, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseScopes_SplitsAndIgnoresTheRest(t *testing.T) {
	got := core.ParseScopes("openid  user/Patient.rs\tfhirUser", "patient/Appointment.read bogus")
	want := []core.Scope{{"user", "Patient", "rs"}, {"patient", "Appointment", "rs"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseScopes = %+v, want %+v", got, want)
	}
	if got := core.ParseScopes(); got != nil {
		t.Fatalf("ParseScopes() = %+v, want nil", got)
	}
}

func TestActorAllows(t *testing.T) {
	a := core.Actor{Subject: "s", Scopes: core.ParseScopes("user/Patient.rs patient/*.c system/Appointment.u")}
	for _, tt := range []struct {
		context, resource string
		perm              byte
		want              bool
	}{
		{"user", "Patient", 's', true},
		{"user", "Patient", 'r', true},
		{"user", "Patient", 'c', false},
		{"system", "Patient", 's', false},
		{"patient", "Patient", 's', false},
		{"patient", "Appointment", 'c', true}, // through the wildcard
		{"patient", "Appointment", 's', false},
		{"system", "Appointment", 'u', true},
		{"user", "Appointment", 'u', false},
	} {
		if got := a.Allows(tt.context, tt.resource, tt.perm); got != tt.want {
			t.Errorf("Allows(%s, %s, %c) = %v, want %v", tt.context, tt.resource, tt.perm, got, tt.want)
		}
	}
	if (core.Actor{Subject: "s"}).Allows("user", "Patient", 's') {
		t.Error("an actor without scopes is allowed")
	}
}

func TestInsufficientScope_NamesTheScope(t *testing.T) {
	e := core.InsufficientScope("user/Patient.rs")
	if e.Kind != core.KindForbidden || e.Code != "insufficient_scope" || e.Scope != "user/Patient.rs" {
		t.Fatalf("InsufficientScope = %+v", e)
	}
}
