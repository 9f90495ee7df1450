package business

import (
	"strings"
	"time"
)

// ParseDay reads a weekday name in any letter case ("monday", "MONDAY").
func ParseDay(s string) (time.Weekday, bool) {
	for d := time.Sunday; d <= time.Saturday; d++ {
		if strings.EqualFold(s, d.String()) {
			return d, true
		}
	}
	return 0, false
}

// ParseClock reads a 24-hour time HH:MM and returns minutes after midnight.
func ParseClock(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, m := digits2(s[:2]), digits2(s[3:])
	if h < 0 || h > 23 || m < 0 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

func digits2(s string) int {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return -1
	}
	return int(s[0]-'0')*10 + int(s[1]-'0')
}

// HoursInput is one entry as a client sends it.
type HoursInput struct {
	Day, Start, End string
}

// parse validates one entry; prefix ("operatingHours[2]") names the entry
// in the messages.
func (in HoursInput) parse(prefix string, p *problems) Hours {
	name := func(f string) string {
		if prefix == "" {
			return f
		}
		return prefix + "." + f
	}
	day, ok := ParseDay(strings.TrimSpace(in.Day))
	if !ok {
		p.add(name("day"), "must be a weekday name, Monday to Sunday")
	}
	start, okStart := ParseClock(in.Start)
	if !okStart {
		p.add(name("start_time"), "must be HH:MM (24-hour)")
	}
	end, okEnd := ParseClock(in.End)
	if !okEnd {
		p.add(name("end_time"), "must be HH:MM (24-hour)")
	}
	if okStart && okEnd && end <= start {
		p.add(name("end_time"), "must be after start_time")
	}
	return Hours{Day: day, Start: in.Start, End: in.End}
}
