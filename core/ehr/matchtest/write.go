package matchtest

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/carebridge/carebridge/core/ehr"
)

// facts is what one record says of its person, as the generator knows it
// (not as a reader of the record would work it out): the values written,
// before formatting noise, "" for what the record lacks.
type facts struct {
	person     int
	source     string
	given      string // the first given name written (a nickname is its own name)
	givenTypo  bool
	family     string // the family name written: at birth, married or joined
	familyTypo bool
	suffix     string
	birth      string // as written: possibly with swapped day and month or a wrong digit
	phone      string // ten digits
	email      string // lower case
	address    string // address.key
	ssn        string
}

// write makes one record of p; married, moved and movedPhone say whether it
// carries p's new family name, old address and old phone. The parts draw
// from the random source in the order they are called.
func (g *gen) write(p *person, married, moved, movedPhone bool) (ehr.Patient, facts) {
	f := facts{person: p.ID}
	var rec ehr.Patient
	g.writeGiven(&rec, &f, p)
	g.writeFamily(&rec, &f, p, married)
	g.writeBirth(&rec, &f, p)
	if !g.chance(g.c.MissingGender) {
		rec.Gender = p.Gender
	}
	g.writePhone(&rec, &f, p, movedPhone)
	g.writeEmail(&rec, &f, p)
	g.writeAddress(&rec, &f, p, moved)
	g.writeSSN(&rec, &f, p)
	rec.LastUpdated = asOf.Add(-time.Duration(g.r.IntN(5*365*24)) * time.Hour)
	return rec, f
}

// writeGiven writes p's given names, unless the record lacks them: the
// first one possibly as a nickname or with a typo, the middle one in full,
// as an initial or not at all.
func (g *gen) writeGiven(rec *ehr.Patient, f *facts, p *person) {
	if g.chance(g.c.MissingGiven) {
		return
	}
	given := p.Given
	switch {
	case p.nicks && g.chance(g.c.Nickname):
		ns := nicknames[p.Given]
		given = ns[g.r.IntN(len(ns))]
	case g.chance(g.c.GivenTypo):
		given, f.givenTypo = g.typo(given), true
	}
	f.given = given
	rec.Name.Given = []string{g.noise(given)}
	if p.Middle != "" {
		switch u := g.r.Float64(); {
		case u < 0.3:
			rec.Name.Given = append(rec.Name.Given, g.noise(p.Middle))
		case u < 0.4:
			rec.Name.Given = append(rec.Name.Given, string([]rune(p.Middle)[:1])+".")
		}
	}
}

// writeFamily writes p's family name (the married one if married), its
// suffix in its own field, after the family name or not at all, and
// sometimes the whole name as text; it follows writeGiven, whose names the
// text repeats.
func (g *gen) writeFamily(rec *ehr.Patient, f *facts, p *person, married bool) {
	family := p.Family
	if married {
		family = p.Married
	}
	if g.chance(g.c.FamilyTypo) {
		family, f.familyTypo = g.typo(family), true
	}
	f.family = family
	written := g.noise(family)
	if p.Suffix != "" {
		suffix := p.Suffix
		if g.chance(0.3) {
			suffix += "."
		}
		switch u := g.r.Float64(); {
		case u < 0.6 && !(p.Suffix == "Sr" && g.chance(0.4)): // Sr is often left out
			rec.Name.Suffix = []string{suffix}
			f.suffix = p.Suffix
		case u < 0.85:
			sep := []string{" ", ", "}[g.r.IntN(2)]
			written += sep + suffix
			f.suffix = p.Suffix
		}
	}
	rec.Name.Family = written
	if g.chance(0.5) {
		rec.Name.Text = strings.TrimSpace(strings.Join(rec.Name.Given, " ") + " " + written)
	}
}

// writeBirth writes p's birth date, unless the record lacks it, possibly
// with day and month swapped or one digit wrong.
func (g *gen) writeBirth(rec *ehr.Patient, f *facts, p *person) {
	if g.chance(g.c.MissingBirthDate) {
		return
	}
	birth := p.Birth
	switch u := g.r.Float64(); {
	case u < g.c.DateSwap:
		birth = swapDayMonth(birth)
	case u < g.c.DateSwap+g.c.DateDigit:
		birth = g.wrongDigit(birth)
	}
	rec.BirthDate, f.birth = birth, birth
}

// writePhone writes p's phone (the old one if movedPhone), unless the
// record lacks it, in one of the formats and uses systems keep.
func (g *gen) writePhone(rec *ehr.Patient, f *facts, p *person, movedPhone bool) {
	if g.chance(g.c.MissingPhone) {
		return
	}
	phone := p.phone
	if movedPhone {
		phone = p.oldPhone
	}
	f.phone = phone
	rec.Telecom = append(rec.Telecom, ehr.ContactPoint{System: "phone", Value: g.formatPhone(phone), Use: []string{"home", "mobile", "work"}[g.r.IntN(3)]})
}

// writeEmail writes p's e-mail address, unless the record lacks it, in
// upper case or capitalised by some systems, before or after the phone.
func (g *gen) writeEmail(rec *ehr.Patient, f *facts, p *person) {
	if g.chance(g.c.MissingEmail) {
		return
	}
	f.email = p.email
	email := p.email
	switch u := g.r.Float64(); {
	case u < 0.05:
		email = strings.ToUpper(email)
	case u < 0.12:
		email = strings.ToUpper(email[:1]) + email[1:]
	}
	ec := ehr.ContactPoint{System: "email", Value: email, Use: "home"}
	if g.chance(0.3) {
		rec.Telecom = append([]ehr.ContactPoint{ec}, rec.Telecom...)
	} else {
		rec.Telecom = append(rec.Telecom, ec)
	}
}

// writeAddress writes p's address (the old one if moved), unless the
// record lacks it; the facts keep the unit when it went into the first line.
func (g *gen) writeAddress(rec *ehr.Patient, f *facts, p *person, moved bool) {
	if g.chance(g.c.MissingAddress) {
		return
	}
	a := p.addr
	if moved {
		a = p.oldAddr
	}
	written, inline := g.formatAddress(a)
	f.address = a.key()
	if inline {
		f.address += "|" + a.unit // the unit is part of the first line
	}
	rec.Address = []ehr.Address{written}
}

// writeSSN writes p's social security number, if p has one and the record
// carries it, possibly with a wrong digit: the one identifier other than
// the system's own (added when it numbers the record).
func (g *gen) writeSSN(rec *ehr.Patient, f *facts, p *person) {
	if p.SSN == "" || !g.chance(g.c.SSNInRecord) {
		return
	}
	ssn := p.SSN
	if g.chance(g.c.SSNTypo) {
		ssn = g.wrongSSNDigit(ssn)
	}
	f.ssn = ssn
	rec.Identifiers = append(rec.Identifiers, ehr.Identifier{System: SSNSystem, Value: ssn, Type: "SS"})
}

// typo makes one typing error in one of s's letters: a substitution, an
// insertion, a deletion or a transposition of neighbours.
func (g *gen) typo(s string) string {
	rs := []rune(s)
	letters := []int{}
	for i, r := range rs {
		if unicode.IsLetter(r) {
			letters = append(letters, i)
		}
	}
	if len(letters) < 3 {
		return s
	}
	for {
		i := letters[g.r.IntN(len(letters))]
		c := rune('a' + g.r.IntN(26))
		if unicode.IsUpper(rs[i]) {
			c = unicode.ToUpper(c)
		}
		var out []rune
		switch g.r.IntN(4) {
		case 0:
			if unicode.ToLower(c) == unicode.ToLower(rs[i]) {
				continue
			}
			out = append(append(append(out, rs[:i]...), c), rs[i+1:]...)
		case 1:
			out = append(append(append(out, rs[:i+1]...), unicode.ToLower(c)), rs[i+1:]...)
		case 2:
			if i == 0 {
				continue
			}
			out = append(append(out, rs[:i]...), rs[i+1:]...)
		case 3:
			j := i + 1
			if j >= len(rs) || !unicode.IsLetter(rs[j]) || unicode.ToLower(rs[j]) == unicode.ToLower(rs[i]) || i == 0 {
				continue
			}
			out = append(out, rs...)
			out[i], out[j] = out[j], out[i]
		}
		return string(out)
	}
}

// noise writes a name the way systems differ in writing it: accents dropped,
// upper case, a hyphen as a space, an apostrophe or the spaces of a name
// of several words left out, stray spaces.
func (g *gen) noise(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { _, ok := fold[r]; return ok }) && g.chance(0.5) {
		var b strings.Builder
		for _, r := range s {
			if f, ok := fold[r]; ok {
				b.WriteString(f)
			} else {
				b.WriteRune(r)
			}
		}
		s = b.String()
	}
	if strings.Contains(s, "-") && g.chance(0.25) {
		s = strings.ReplaceAll(s, "-", " ")
	}
	if strings.Contains(s, "'") && g.chance(0.3) {
		s = strings.ReplaceAll(s, "'", []string{"", " ", "’"}[g.r.IntN(3)])
	}
	if strings.Contains(s, ". ") && g.chance(0.3) {
		s = strings.ReplaceAll(s, ". ", " ")
	}
	if strings.Contains(s, " ") && g.chance(0.2) {
		s = strings.ReplaceAll(s, " ", "")
	}
	switch u := g.r.Float64(); {
	case u < 0.08:
		s = strings.ToUpper(s)
	case u < 0.10:
		s = strings.ToLower(s)
	}
	if g.chance(0.02) {
		s = " " + s + "  "
	}
	return s
}

func swapDayMonth(d string) string {
	y, m, day := d[:4], d[5:7], d[8:10]
	if day > "12" || day == m || day == "00" {
		return d
	}
	return y + "-" + day + "-" + m
}

// wrongDigit changes one digit of the year's last, the month or the day,
// keeping a valid date.
func (g *gen) wrongDigit(d string) string {
	for range 50 {
		b := []byte(d)
		i := []int{3, 5, 6, 8, 9}[g.r.IntN(5)]
		b[i] = byte('0' + g.r.IntN(10))
		if s := string(b); s != d {
			if _, err := time.Parse(time.DateOnly, s); err == nil {
				return s
			}
		}
	}
	return d
}

func (g *gen) wrongSSNDigit(s string) string {
	b := []byte(s)
	for {
		i := g.r.IntN(len(b))
		if b[i] == '-' {
			continue
		}
		c := byte('0' + g.r.IntN(10))
		if c != b[i] {
			b[i] = c
			return string(b)
		}
	}
}

// formatPhone writes ten digits in one of the ways systems keep them.
func (g *gen) formatPhone(d string) string {
	a, x, l := d[:3], d[3:6], d[6:]
	switch g.r.IntN(7) {
	case 0:
		return "+1-" + a + "-" + x + "-" + l
	case 1:
		return "(" + a + ") " + x + "-" + l
	case 2:
		return a + "." + x + "." + l
	case 3:
		return d
	case 4:
		return a + "-" + x + "-" + l
	case 5:
		return "+1 " + a + " " + x + " " + l
	default:
		return "+1" + d
	}
}

// formatAddress writes a, its street type and direction long or short, in
// some systems in upper case, with a 5- or 9-digit ZIP code; inline says
// whether the unit (apartment) went into the first line.
func (g *gen) formatAddress(a address) (_ ehr.Address, inline bool) {
	var parts []string
	parts = append(parts, fmt.Sprint(a.number))
	short := g.chance(0.5)
	if a.direction >= 0 {
		parts = append(parts, directions[a.direction][btoi(short)])
	}
	parts = append(parts, a.street)
	st := streetTypes[a.stype][btoi(g.chance(0.5))]
	if st == streetTypes[a.stype][1] && g.chance(0.25) {
		st += "."
	}
	parts = append(parts, st)
	line := strings.Join(parts, " ")
	lines := []string{line}
	if a.unit != "" {
		if inline = g.chance(0.2); inline {
			lines[0] += ", " + a.unit
		} else {
			lines = append(lines, a.unit)
		}
	}
	city, state := a.place.city, a.place.state
	if g.chance(0.1) {
		for i := range lines {
			lines[i] = strings.ToUpper(lines[i])
		}
		city = strings.ToUpper(city)
	}
	zip := a.zip
	if g.chance(0.3) {
		zip += "-" + a.plus4
	}
	country := []string{"US", "USA", ""}[g.r.IntN(3)]
	return ehr.Address{Line: lines, City: city, State: state, PostalCode: zip, Country: country}, inline
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
