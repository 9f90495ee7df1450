package core

import (
	"net/mail"
	"regexp"
	"strings"
)

// ValidEmail accepts a bare address (no display name) of at most 254 bytes
// with a dotted domain that has no empty label. Both cores use it, so an
// address one accepts the other accepts too.
func ValidEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || len(s) > 254 {
		return false
	}
	_, domain, _ := strings.Cut(s, "@")
	return strings.Contains(domain, ".") && !strings.HasSuffix(domain, ".") && !strings.Contains(domain, "..")
}

var phonePattern = regexp.MustCompile(`^\+?[0-9 ().-]{7,25}$`)

// ValidPhone accepts 7 to 15 digits (E.164's most) with the usual
// separators — spaces, dots, dashes, brackets — and an optional leading +.
func ValidPhone(s string) bool {
	if !phonePattern.MatchString(s) {
		return false
	}
	n := 0
	for _, c := range s {
		if c >= '0' && c <= '9' {
			n++
		}
	}
	return n >= 7 && n <= 15
}
