package core

import (
	"strings"
	"testing"
)

func TestValidEmail_AcceptsBareAddressWithDottedDomain(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"jane@example.com", true},
		{"jane.smith+clinic@mail.example.co.uk", true},
		{"j_s-1@sub.example.org", true},
		{"", false},
		{"jane", false},
		{"jane@", false},
		{"@example.com", false},
		{"jane@localhost", false},    // no dot in the domain
		{"jane@example.", false},     // trailing dot
		{"jane@example..com", false}, // empty label
		{"Jane Smith <jane@example.com>", false},
		{"<jane@example.com>", false},
		{" jane@example.com", false},
		{"jane@exa mple.com", false},
		{"jane@@example.com", false},
		{"a@b.c" + strings.Repeat("o", 250), false}, // longer than 254
	} {
		if got := ValidEmail(tc.in); got != tc.want {
			t.Errorf("ValidEmail(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestValidPhone_AcceptsUsualSeparatorsAndSevenToFifteenDigits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"(312) 555-0100", true},
		{"312-555-0100", true},
		{"312.555.0100", true},
		{"+1 312 555 0100", true},
		{"5550100", true},
		{"+441632960961", true},
		{"555010", false},             // 6 digits
		{"1234567890123456", false},   // 16 digits
		{"312-555-CALL", false},       // letters
		{"312 555 0100 ext 5", false}, // letters
		{"1+312 555 0100", false},     // + not leading
		{"++1 312 555 0100", false},
		{"(((((((", false},
		{"", false},
	} {
		if got := ValidPhone(tc.in); got != tc.want {
			t.Errorf("ValidPhone(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
