package ehr

import (
	"errors"
	"testing"

	"github.com/carebridge/carebridge/core"
)

func actorWith(scopes string) core.Actor {
	return core.Actor{Subject: "s", Scopes: core.ParseScopes(scopes)}
}

func TestCheckSearch(t *testing.T) {
	for _, tt := range []struct {
		scopes string
		ok     bool
	}{
		{"user/Patient.rs", true},
		{"user/Patient.s", true},
		{"system/Patient.read", true},
		{"user/*.cruds", true},
		{"user/Patient.r", false},         // read without search
		{"patient/Patient.rs", false},     // a patient may not search others
		{"user/Appointment.cruds", false}, // another resource
		{"openid profile", false},
		{"", false},
	} {
		err := checkSearch(actorWith(tt.scopes))
		if (err == nil) != tt.ok {
			t.Errorf("%q: %v, want allowed %v", tt.scopes, err, tt.ok)
		}
		var e *core.Error
		if err != nil && (!errors.As(err, &e) || e.Code != "insufficient_scope" || e.Scope != "user/Patient.rs" || e.Kind != core.KindForbidden) {
			t.Errorf("%q: %#v, want insufficient_scope naming user/Patient.rs", tt.scopes, err)
		}
	}
}

func TestAppointmentReach(t *testing.T) {
	for _, tt := range []struct {
		scopes string
		perm   byte
		want   reach
	}{
		{"user/Appointment.cruds", 'c', reachAll},
		{"user/Appointment.cruds", 's', reachAll},
		{"user/Appointment.cruds", 'u', reachAll},
		{"system/Appointment.write", 'u', reachAll},
		{"system/*.*", 's', reachAll},
		{"patient/Appointment.cs", 'c', reachOwn},
		{"patient/Appointment.cs", 's', reachOwn},
		{"patient/Appointment.cs", 'u', 0},
		{"patient/Appointment.cus patient/*.u", 'u', reachOwn},
		{"patient/Appointment.cruds user/Appointment.s", 's', reachAll}, // the wider grant wins
		{"user/Appointment.rs", 'c', 0},
		{"user/Appointment.r", 's', 0},
		{"user/Patient.rs", 's', 0},
		{"", 'c', 0},
	} {
		got, err := appointmentReach(actorWith(tt.scopes), tt.perm)
		if got != tt.want || (err == nil) != (tt.want != 0) {
			t.Errorf("%q %c: %v, %v; want %v", tt.scopes, tt.perm, got, err, tt.want)
		}
		var e *core.Error
		if err != nil && (!errors.As(err, &e) || e.Scope != "user/Appointment."+string(tt.perm)) {
			t.Errorf("%q %c: %#v does not name user/Appointment.%c", tt.scopes, tt.perm, err, tt.perm)
		}
	}
}
