package ehr

import "time"

// Instant is a time a client sent, parsed at the edge (RFC 3339 with an
// offset). The zero Instant is none sent; an Invalid one was sent but is
// not such a time: the core reports it among the request's other field
// problems, after it has checked the caller, as it does a bad e-mail.
type Instant struct {
	Time    time.Time
	Invalid bool
	// Raw is the text the client sent. Only the Idempotency-Key
	// fingerprint reads it, which hashes the request as it was sent.
	Raw string
}

// sent reports whether the client sent the time at all.
func (i Instant) sent() bool { return i.Invalid || i.Raw != "" || !i.Time.IsZero() }

// text is the time as the client sent it: Raw, or (for an Instant built
// without it) the time in RFC 3339.
func (i Instant) text() string {
	if i.Raw != "" || i.Invalid || i.Time.IsZero() {
		return i.Raw
	}
	return i.Time.Format(time.RFC3339Nano)
}

// Date is a civil date a client sent (YYYY-MM-DD), parsed at the edge; the
// core places it in a time zone. The zero Date is none sent, or one that
// is not a date.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// valid reports whether d is a date.
func (d Date) valid() bool { return d.Month != 0 }

// midnight is the start of day d in loc, plus days.
func (d Date) midnight(loc *time.Location, days int) time.Time {
	return time.Date(d.Year, d.Month, d.Day+days, 0, 0, 0, 0, loc)
}

// Clip cuts p to the window [from, to); ok is false when nothing of p is
// left (p lies wholly outside the window, only touches it, or is empty).
// Every adapter that answers free time for a window cuts it here, so a
// slot that straddles a bound is cut the same way whatever EHR sent it.
func (p Period) Clip(from, to time.Time) (_ Period, ok bool) {
	if p.Start.Before(from) {
		p.Start = from
	}
	if p.End.After(to) {
		p.End = to
	}
	return p, p.End.After(p.Start)
}

// ClipPeriods cuts each of ps to [from, to) and drops those of which
// nothing is left, keeping their order; the result is never nil.
func ClipPeriods(ps []Period, from, to time.Time) []Period {
	out := make([]Period, 0, len(ps))
	for _, p := range ps {
		if c, ok := p.Clip(from, to); ok {
			out = append(out, c)
		}
	}
	return out
}
