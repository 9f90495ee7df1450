package ehr

import (
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// What every EHR adapter does to upstream data on its way into the
// internal model, written once.

// MergePeriods sorts ps and joins those that overlap or touch; it does not
// change ps, and answers an empty (not nil) slice for none.
func MergePeriods(ps []Period) []Period {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b Period) int { return a.Start.Compare(b.Start) })
	out := make([]Period, 0, len(ps))
	for _, p := range ps {
		if n := len(out); n > 0 && !p.Start.After(out[n-1].End) {
			if p.End.After(out[n-1].End) {
				out[n-1].End = p.End
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// NormalDate keeps a date (YYYY, YYYY-MM or YYYY-MM-DD; the date part of a
// date-time) and drops anything else.
func NormalDate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 10 && s[10] == 'T' {
		s = s[:10]
	}
	for _, layout := range []string{time.DateOnly, "2006-01", "2006"} {
		if len(s) == len(layout) {
			if _, err := time.Parse(layout, s); err == nil {
				return s
			}
		}
	}
	return ""
}

// NormalGender keeps male, female, other and unknown (any case) and drops
// anything else.
func NormalGender(s string) string {
	switch g := strings.ToLower(strings.TrimSpace(s)); g {
	case "male", "female", "other", "unknown":
		return g
	}
	return ""
}

// NonEmpty trims the strings and drops the empty ones (upstream arrays may
// hold nulls).
func NonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ClipText makes upstream text fit for an error message or a log: invalid
// UTF-8 is dropped, control and format characters and runs of white space
// become one space, and it is cut to max bytes on a rune boundary.
func ClipText(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(strings.ToValidUTF8(s, ""), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}), " ")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
