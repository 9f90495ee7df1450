package ehr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core/ehr"
)

func TestParseAppointmentID_AcceptsTheServiceSyntaxOnly(t *testing.T) {
	for _, id := range []string{"apt-1", "a.b_c:d-9", "X", strings.Repeat("a", 128)} {
		if got, err := ehr.ParseAppointmentID(id); err != nil || got != id {
			t.Errorf("%q: %q, %v", id, got, err)
		}
	}
	for _, id := range []string{"", strings.Repeat("a", 129), "a b", "a/b", "Zebulon<script>", "é", "a\x00", "apt-1%"} {
		if _, err := ehr.ParseAppointmentID(id); !errors.Is(err, ehr.ErrAppointmentNotFound) {
			t.Errorf("%q: %v, want appointment_not_found", id, err)
		}
	}
}
