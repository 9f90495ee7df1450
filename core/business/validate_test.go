package business

import (
	"strings"
	"testing"
	"time"
)

// validatorCase is one input of a format check and whether it must pass.
type validatorCase struct {
	in   string
	want bool
}

func runValidator(t *testing.T, name string, valid func(string) bool, cases []validatorCase) {
	t.Helper()
	for _, tc := range cases {
		if got := valid(tc.in); got != tc.want {
			t.Errorf("%s(%q) = %v, want %v", name, tc.in, got, tc.want)
		}
	}
}

func TestValidNPI_RequiresTenDigitsAndLuhnCheckWithPrefix80840(t *testing.T) {
	runValidator(t, "ValidNPI", ValidNPI, []validatorCase{
		// Check digits computed with the CMS method (Luhn over the nine
		// digits plus the constant 24 for the prefix 80840).
		{"1234567893", true},
		{"1245319599", true},
		{"1003000126", true},
		{"1999999992", true},
		{"0000000006", true},
		{"1234567890", false}, // wrong check digit
		{"1234567894", false},
		{"1245319598", false},
		{"1003000127", false},
		{"1234567839", false}, // two digits swapped
		{"123456789", false},  // 9 digits
		{"12345678933", false},
		{"", false},
		{"123456789a", false},
		{"abcdefghij", false},
		{"12345-7893", false},
		{" 234567893", false},
		{"+234567893", false},
		{"１234567893", false}, // full-width digit
	})
}

func TestValidEIN_AcceptsTwoDashSevenDigits(t *testing.T) {
	runValidator(t, "ValidEIN", ValidEIN, []validatorCase{
		{"12-3456789", true},
		{"00-0000000", true},
		{"123456789", false},
		{"12-345678", false},
		{"12-34567890", false},
		{"123-456789", false},
		{"ab-cdefghi", false},
		{"12 3456789", false},
		{"12-3456789\n", false},
		{"", false},
	})
}

func TestValidZIP_AcceptsFiveOrNineDigitForms(t *testing.T) {
	runValidator(t, "ValidZIP", ValidZIP, []validatorCase{
		{"60601", true},
		{"60601-1234", true},
		{"00501", true},
		{"6060", false},
		{"606011", false},
		{"60601-123", false},
		{"60601-12345", false},
		{"606011234", false},
		{"60601 1234", false},
		{"ABCDE", false},
		{"K1A 0B1", false},
		{"", false},
	})
}

func TestValidURL_AcceptsOnlyHTTPAndHTTPSWithHost(t *testing.T) {
	runValidator(t, "ValidURL", ValidURL, []validatorCase{
		{"https://example.com", true},
		{"http://example.com/path?q=1#frag", true},
		{"https://clinic.example.com:8443/book", true},
		{"HTTPS://EXAMPLE.COM", true},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(document.cookie)", false},
		{"ftp://example.com", false},
		{"mailto:jane@example.com", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"file:///etc/passwd", false},
		{"//example.com", false}, // no scheme
		{"example.com", false},
		{"https://", false},
		{"http:///path", false}, // no host
		{"https://user:pass@example.com", false},
		{"https://user@example.com", false},
		{"https://exa mple.com", false},
		{"https://example.com/" + strings.Repeat("a", 2048), false},
		{"", false},
	})
}

func TestValidTimezone_AcceptsIANANamesOnly(t *testing.T) {
	runValidator(t, "ValidTimezone", ValidTimezone, []validatorCase{
		{"America/Chicago", true},
		{"UTC", true},
		{"Europe/Berlin", true},
		{"Asia/Kolkata", true},
		{"Local", false},
		{"", false},
		{"Mars/Base", false},
		{"../etc/passwd", false},
		{"America/../../etc/passwd", false},
		{"/etc/localtime", false},
		{"/usr/share/zoneinfo/UTC", false},
		{"America/Chicago/", false},
	})
}

func TestValidState_AcceptsUpperCaseUSCodes(t *testing.T) {
	runValidator(t, "ValidState", ValidState, []validatorCase{
		{"IL", true},
		{"TX", true},
		{"DC", true},
		{"PR", true},
		{"GU", true},
		{"il", false}, // the services upper-case first
		{"Il", false},
		{"ZZ", false},
		{"ILL", false},
		{"Illinois", false},
		{"I", false},
		{"", false},
	})
}

func TestParseDay_AcceptsWeekdayNamesInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   time.Weekday
		wantOK bool
	}{
		{"Monday", time.Monday, true},
		{"monday", time.Monday, true},
		{"MONDAY", time.Monday, true},
		{"tUeSdAy", time.Tuesday, true},
		{"Wednesday", time.Wednesday, true},
		{"thursday", time.Thursday, true},
		{"Friday", time.Friday, true},
		{"saturday", time.Saturday, true},
		{"SUNDAY", time.Sunday, true},
		{"Mon", 0, false},
		{"Mondays", 0, false},
		{"Funday", 0, false},
		{" Monday", 0, false},
		{"1", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseDay(tc.in)
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("ParseDay(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

func TestParseClock_AcceptsTwentyFourHourHHMM(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   int
		wantOK bool
	}{
		{"00:00", 0, true},
		{"09:05", 9*60 + 5, true},
		{"12:30", 12*60 + 30, true},
		{"23:59", 23*60 + 59, true},
		{"24:00", 0, false},
		{"9:00", 0, false},
		{"09:0", 0, false},
		{"12:60", 0, false},
		{"ab:cd", 0, false},
		{"-1:00", 0, false},
		{"12-30", 0, false},
		{"1230", 0, false},
		{"12:30:00", 0, false},
		{" 9:00", 0, false},
		{"", 0, false},
	} {
		got, ok := ParseClock(tc.in)
		if ok != tc.wantOK || (ok && got != tc.want) {
			t.Errorf("ParseClock(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}
