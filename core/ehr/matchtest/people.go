package matchtest

import (
	"math"
	"slices"
	"time"
)

// The people of a population: who they are, and the hard negatives among them.

func (g *gen) newPerson(gender string) *person {
	if gender == "" {
		gender = []string{"male", "female"}[g.r.IntN(2)]
	}
	p := &person{Individual: Individual{ID: len(g.people), Gender: gender}}
	p.Given = g.givenFor(gender)
	if g.chance(0.6) {
		for p.Middle == "" || p.Middle == p.Given {
			p.Middle = g.givenFor(gender)
		}
	}
	p.Family = g.pick(families, g.familyCDF)
	p.Birth = g.birth(earliest, latest)
	p.nicks = len(nicknames[p.Given]) > 0
	p.addr = g.address(places[g.r.IntN(len(places))])
	p.oldAddr = g.address(p.addr.place)
	if g.chance(0.3) {
		p.oldAddr = g.address(places[g.r.IntN(len(places))])
	}
	p.phone, p.oldPhone = g.phone(p.addr.place), g.phone(p.oldAddr.place)
	p.email = g.email(p.Given, p.Family)
	if g.chance(g.c.SSN) {
		p.SSN = g.ssn()
	}
	if gender == "male" && g.chance(0.02) {
		p.Suffix = []string{"Jr", "II", "III"}[g.r.IntN(3)]
	}
	if gender == "female" && p.Birth < "2005" && g.chance(g.c.Married) {
		for p.Married == "" || p.Married == p.Family {
			p.Married = g.pick(families, g.familyCDF)
		}
		if g.chance(0.3) {
			p.Married = p.Family + "-" + p.Married
		}
	}
	return p
}

func (g *gen) add(p *person) *person {
	p.ID = len(g.people)
	g.people = append(g.people, p)
	return p
}

func (g *gen) negative(a, b *person, k Kind) {
	a.hardNegative, b.hardNegative = true, true
	g.negatives = append(g.negatives, HardNegative{A: min(a.ID, b.ID), B: max(a.ID, b.ID), Kind: k})
}

// makePeople makes n true people: the hard-negative groups first, then
// people on their own.
func (g *gen) makePeople(n int) {
	groups := func(rate float64) int { return int(math.Round(rate * float64(n))) }
	g.makeTwins(n, groups(g.c.Twins))
	g.makeJrSr(n, groups(g.c.JrSr))
	g.makeHouseholds(n, groups(g.c.Households))
	g.makeNamesakes(n, groups(g.c.Namesakes))
	for len(g.people) < n {
		g.add(g.newPerson(""))
	}
}

// makeTwins makes up to pairs pairs of twins, as long as the population
// stays within n people: one family, birth date and home, distinct given
// names.
func (g *gen) makeTwins(n, pairs int) {
	for range pairs {
		if len(g.people)+2 > n {
			return
		}
		a := g.add(g.newPerson(""))
		a.Married = ""
		b := g.newPerson("")
		b.Married, b.Suffix = "", ""
		b.Given = g.distinctGiven(b.Gender, a.Given)
		b.nicks = len(nicknames[b.Given]) > 0
		b.Family, b.Birth = a.Family, a.Birth
		b.phone, b.oldPhone, b.addr, b.oldAddr = a.phone, a.oldPhone, a.addr, a.oldAddr
		b.email = g.email(b.Given, b.Family)
		g.negative(a, g.add(b), Twins)
	}
}

// makeJrSr makes up to pairs fathers and sons of the same names, Sr and
// Jr, as long as the population stays within n people: one home, the son
// born 20 to 40 years after his father.
func (g *gen) makeJrSr(n, pairs int) {
	for range pairs {
		if len(g.people)+2 > n {
			return
		}
		father := g.add(g.newPerson("male"))
		father.Birth = g.birth(earliest, time.Date(1980, 12, 31, 0, 0, 0, 0, time.UTC))
		father.Suffix = "Sr"
		fb, _ := time.Parse(time.DateOnly, father.Birth)
		son := g.newPerson("male")
		son.Given, son.Middle, son.Family, son.nicks = father.Given, father.Middle, father.Family, father.nicks
		son.Suffix = "Jr"
		last := fb.AddDate(40, 0, 0)
		if last.After(latest) {
			last = latest
		}
		son.Birth = g.birth(fb.AddDate(20, 0, 0), last)
		son.phone, son.oldPhone, son.addr, son.oldAddr = father.phone, father.oldPhone, father.addr, father.oldAddr
		son.email = g.email(son.Given, son.Family)
		g.negative(father, g.add(son), JrSr)
	}
}

// makeHouseholds makes up to count households of 2 to 4 people, as long
// as the population stays within n people: one family name and home,
// distinct given names and birth years; every two members are a hard
// negative.
func (g *gen) makeHouseholds(n, count int) {
	for range count {
		size := 2 + g.r.IntN(3)
		if len(g.people)+size > n {
			return
		}
		head := g.add(g.newPerson(""))
		head.Married = ""
		members := []*person{head}
		for len(members) < size {
			members = append(members, g.add(g.householdMember(head, members)))
		}
	}
}

// householdMember makes one more member of head's household, a hard
// negative of each of members.
func (g *gen) householdMember(head *person, members []*person) *person {
	m := g.newPerson("")
	m.Married, m.Family = "", head.Family
	taken := make([]string, 0, len(members))
	births := make([]string, 0, len(members))
	for _, o := range members {
		taken, births = append(taken, o.Given), append(births, o.Birth)
	}
	m.Given = g.distinctGiven(m.Gender, taken...)
	m.nicks = len(nicknames[m.Given]) > 0
	for slices.ContainsFunc(births, func(b string) bool { return b[:4] == m.Birth[:4] }) {
		m.Birth = g.birth(earliest, latest)
	}
	m.phone, m.oldPhone, m.addr, m.oldAddr = head.phone, head.oldPhone, head.addr, head.oldAddr
	m.email = g.email(m.Given, m.Family)
	for _, o := range members {
		g.negative(o, m, Household)
	}
	return m
}

// makeNamesakes makes up to pairs pairs of namesakes, as long as the
// population stays within n people: one given and family name and birth
// date, different homes and e-mail addresses.
func (g *gen) makeNamesakes(n, pairs int) {
	for range pairs {
		if len(g.people)+2 > n {
			return
		}
		a := g.add(g.newPerson(""))
		a.Married, a.Suffix = "", ""
		b := g.newPerson(a.Gender)
		b.Married, b.Suffix = "", ""
		b.Given, b.Family, b.Birth, b.nicks = a.Given, a.Family, a.Birth, a.nicks
		b.email = g.email(b.Given, b.Family)
		for b.email == a.email {
			b.email = g.email(b.Given, b.Family)
		}
		g.negative(a, g.add(b), Namesake)
	}
}

// distinctGiven draws a given name for gender that is at least three edits
// from each of taken and not a nickname of theirs (so that one typo in a
// record never brings two siblings' names within one typo).
func (g *gen) distinctGiven(gender string, taken ...string) string {
	for {
		name := g.givenFor(gender)
		if !slices.ContainsFunc(taken, func(t string) bool { return related(name, t) }) {
			return name
		}
	}
}

func related(a, b string) bool {
	if distance(plain(a), plain(b)) < 3 {
		return true
	}
	for _, n := range nicknames[a] {
		if slices.Contains(nicknames[b], n) || n == b {
			return true
		}
	}
	return slices.Contains(nicknames[b], a)
}
