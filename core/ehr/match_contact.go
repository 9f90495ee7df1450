package ehr

import (
	"strings"

	"github.com/nyaruka/phonenumbers"
)

// How matching compares contact details: phones by their national number,
// addresses by a key of their first line and postal code.

// NationalPhone is the number a phone is, as matching compares phones:
// the ten digits of a North American number, however it is written
// ("+1-217-555-0633", "(217) 555-0633"), else its E.164 form read by
// libphonenumber (phonenumbers) with the United States as the default
// region; "" when it is not a number. An extension is left out.
func NationalPhone(s string) string { return string(appendNationalPhone(nil, s)) }

// appendNationalPhone appends NationalPhone(s) to dst.
func appendNationalPhone(dst []byte, s string) []byte {
	if i := strings.IndexAny(s, "xXeE#;"); i >= 0 { // x12, ext. 12, #12, ;ext=12
		s = s[:i]
	}
	from := len(dst)
	plus := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			dst = append(dst, c)
		case c == '+' && len(dst) == from:
			plus = true
		}
	}
	// The common case, without the library's parse: a North American
	// number, written nationally or with +1.
	digits := dst[from:]
	switch {
	case len(digits) == 10 && !plus && digits[0] >= '2':
		return dst
	case len(digits) == 11 && digits[0] == '1' && digits[1] >= '2':
		return append(dst[:from], digits[1:]...)
	case len(digits) < 7 || len(digits) > 15:
		return dst[:from]
	}
	// Elsewhere, the library; a North American number that was not ten
	// digits above (a local seven-digit one) is not a whole number.
	n, err := phonenumbers.Parse(s, "US")
	if err != nil || n.GetCountryCode() == 1 || !phonenumbers.IsPossibleNumber(n) {
		return dst[:from]
	}
	return append(dst[:from], phonenumbers.Format(n, phonenumbers.E164)...)
}

// appendAddressKey appends an address as matching compares it to dst:
// its first line, folded, with street types, directions and unit words
// abbreviated as the US Postal Service does, "|" and the first five
// characters of its postal code; nothing when either is missing.
func (n *normaliser) appendAddressKey(dst []byte, a Address) []byte {
	var line string
	for _, l := range a.Line {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	postal := strings.TrimSpace(a.PostalCode)
	if line == "" || postal == "" {
		return dst
	}
	// The line is folded where the key goes, and its words moved down
	// over the spaces between them (a key is never longer than its line).
	from := len(dst)
	dst = n.appendFolded(dst, line)
	w := from
	for i := from; i < len(dst); {
		if dst[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(dst) && dst[j] != ' ' {
			j++
		}
		if w > from {
			dst[w] = ' '
			w++
		}
		if abbr, ok := streetWords[string(dst[i:j])]; ok && dst[i] > '9' { // a word, not a number
			w += copy(dst[w:], abbr)
		} else {
			w += copy(dst[w:], dst[i:j])
		}
		i = j
	}
	if w == from {
		return dst[:from]
	}
	dst = append(dst[:w], '|')
	if !isASCII(postal) {
		postal = strings.ToLower(strings.ReplaceAll(postal, " ", ""))
		return append(dst, postal[:min(5, len(postal))]...)
	}
	for i, k := 0, 0; i < len(postal) && k < 5; i++ {
		if postal[i] != ' ' {
			dst = appendLower(dst, postal[i:i+1])
			k++
		}
	}
	return dst
}

// streetWords abbreviates the words of a street line (USPS Publication 28:
// street suffixes, directions, unit designators).
var streetWords = map[string]string{
	"street": "st", "str": "st", "avenue": "ave", "av": "ave", "aven": "ave", "road": "rd", "drive": "dr",
	"lane": "ln", "boulevard": "blvd", "boul": "blvd", "court": "ct", "place": "pl", "terrace": "ter",
	"circle": "cir", "highway": "hwy", "parkway": "pkwy", "square": "sq", "trail": "trl", "crescent": "cres",
	"alley": "aly", "expressway": "expy", "freeway": "fwy", "route": "rte", "center": "ctr", "plaza": "plz",
	"point": "pt", "heights": "hts", "mount": "mt", "turnpike": "tpke", "way": "way",
	"north": "n", "south": "s", "east": "e", "west": "w",
	"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
	"apartment": "apt", "suite": "ste", "unit": "unit", "floor": "fl", "building": "bldg", "room": "rm",
}
