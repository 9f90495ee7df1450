package business

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// problems collects field-level validation messages, so a client learns
// every problem of a request at once.
type problems []string

func (p *problems) add(field, msg string) { *p = append(*p, field+" "+msg) }

func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return ErrInvalid.WithMessage("Validation failed: %s", strings.Join(p, "; "))
}

// check runs one format check on an optional field: nil and (unless
// required) empty values pass.
func (p *problems) check(field string, v *string, required bool, valid func(string) bool, msg string) {
	switch {
	case v == nil:
	case *v == "" && required:
		p.add(field, "is required")
	case *v == "":
	case !valid(*v):
		p.add(field, msg)
	}
}

// text checks the free-text fields: UTF-8, no control characters, bounded.
func (p *problems) text(field string, v *string, max int) {
	if v == nil {
		return
	}
	if !utf8.ValidString(*v) || strings.IndexFunc(*v, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) >= 0 {
		p.add(field, "must be plain text")
	} else if utf8.RuneCountInString(*v) > max {
		p.add(field, "must be at most "+strconv.Itoa(max)+" characters")
	}
}

var (
	einPattern = regexp.MustCompile(`^\d{2}-\d{7}$`)
	zipPattern = regexp.MustCompile(`^\d{5}(-\d{4})?$`)
)

// ValidNPI accepts a 10-digit National Provider Identifier whose last digit
// is the Luhn check digit of "80840" followed by the first nine.
func ValidNPI(s string) bool {
	if len(s) != 10 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	digits := "80840" + s[:9]
	sum := 0
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if (len(digits)-1-i)%2 == 0 { // rightmost digit of the payload is doubled
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return int(s[9]-'0') == (10-sum%10)%10
}

// ValidEIN accepts an Employer Identification Number NN-NNNNNNN.
func ValidEIN(s string) bool { return einPattern.MatchString(s) }

// ValidZIP accepts a US ZIP code NNNNN or NNNNN-NNNN.
func ValidZIP(s string) bool { return zipPattern.MatchString(s) }

// ValidURL accepts an absolute http(s) URL with a host.
func ValidURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.User == nil && len(s) <= 2048
}

// ValidTimezone accepts an IANA zone name such as America/Chicago or UTC.
func ValidTimezone(s string) bool {
	if s == "Local" || s == "" || strings.HasPrefix(s, "/") || strings.Contains(s, "..") {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}

// usStates holds the two-letter codes of the states, DC and the territories.
var usStates = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Fields(`AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO
		MT NE NV NH NJ NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC PR VI GU AS MP`) {
		m[s] = true
	}
	return m
}()

// ValidState accepts a two-letter US state, district or territory code.
func ValidState(s string) bool { return usStates[s] }
