package core

import (
	"regexp"
	"testing"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewUUID_IsAFreshVersion4UUID(t *testing.T) {
	a, b := NewUUID(), NewUUID()
	if a == b || !uuidV4.MatchString(a) || !uuidV4.MatchString(b) {
		t.Errorf("uuids %s %s", a, b)
	}
}

func TestIsUUID(t *testing.T) {
	for s, want := range map[string]bool{
		NewUUID():                               true,
		"6F1C2A3E-0000-4000-8000-00000000ABCD":  true,
		"6f1c2a3e-0000-4000-8000-00000000abc":   false, // short
		"6f1c2a3e-0000-4000-8000-00000000abcde": false, // long
		"6f1c2a3e00000-4000-8000-00000000abcd":  false, // dash misplaced
		"6f1c2a3e-0000-4000-8000-00000000abcg":  false, // not hex
		"":                                      false,
	} {
		if got := IsUUID(s); got != want {
			t.Errorf("IsUUID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestParseID_TakesOnlyCanonicalPositiveIDs(t *testing.T) {
	for s, want := range map[string]int64{
		"5":                   5,
		"1234567890":          1234567890,
		"9223372036854775807": 9223372036854775807,
	} {
		if got, ok := ParseID(s); !ok || got != want {
			t.Errorf("ParseID(%q) = %d, %v; want %d", s, got, ok, want)
		}
	}
	for _, s := range []string{
		"", "0", "+5", "-5", "05", "00", " 5", "5 ", "5.0", "5e2", "0x5", "٥", "five",
		"9223372036854775808", "18446744073709551621", "99999999999999999999",
	} {
		if got, ok := ParseID(s); ok {
			t.Errorf("ParseID(%q) = %d, want no id", s, got)
		}
	}
}
