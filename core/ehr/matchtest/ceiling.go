package matchtest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/carebridge/carebridge/core/ehr"
)

// Ceiling returns the people a flawless reading of the contract's certain
// rule and vetoes could form of pop's records, judged from what the
// generator knows each record says rather than from the records' text
// (it normalises nothing: it knows which name is a nickname, which date
// was swapped, which address is the old one). It joins records of the same
// true person only, so Evaluate(pop, Ceiling(pop)) has precision 1 and
// its certain recall is the most any matcher keeping to the contract can
// reach on pop: the true pairs it misses need the probable tier.
//
// It assumes a matcher that folds case, accents, punctuation and spacing
// in names, strips a suffix written in the family string, compares phones
// by their ten national digits, e-mails without case, and addresses by
// first line (street type and direction long or short alike, the unit
// when it is written there) and the first five digits of the ZIP code.
func Ceiling(pop Population) []ehr.Person {
	var out []ehr.Person
	for g, recs := range ceilingGroups(pop) {
		person := ehr.Person{ID: fmt.Sprintf("ceiling-%d", g), PossibleMatches: []ehr.PossibleMatch{}}
		for _, r := range recs {
			person.Sources = append(person.Sources, ehr.SourceRef{Source: pop.Records[r].Source, PatientID: pop.Records[r].ID})
		}
		out = append(out, person)
	}
	return out
}

// ceilingGroups are Ceiling's people as indices of pop.Records.
func ceilingGroups(pop Population) [][]int {
	var out [][]int
	for _, idx := range pop.byPerson() {
		// Join certain pairs, one group at a time, unless a veto stands
		// between any two records of the two groups.
		groups := make([][]int, len(idx))
		for i, r := range idx {
			groups[i] = []int{r}
		}
		for joined := true; joined; {
			joined = false
			for a := 0; a < len(groups) && !joined; a++ {
				for b := a + 1; b < len(groups) && !joined; b++ {
					if joinable(pop.facts, groups[a], groups[b]) {
						groups[a] = append(groups[a], groups[b]...)
						groups = append(groups[:b], groups[b+1:]...)
						joined = true
					}
				}
			}
		}
		out = append(out, groups...)
	}
	return out
}

// byPerson lists the indices of each true person's records.
func (pop Population) byPerson() [][]int {
	by := make([][]int, len(pop.People))
	for i, f := range pop.facts {
		by[f.person] = append(by[f.person], i)
	}
	return by
}

func joinable(fs []facts, a, b []int) bool {
	certain := false
	for _, i := range a {
		for _, j := range b {
			if vetoed(fs[i], fs[j]) {
				return false
			}
			certain = certain || isCertain(fs[i], fs[j])
		}
	}
	return certain
}

// vetoed: the contract's vetoes, of two records of the same true person
// (different MRNs of one system: a duplicate inside that system).
func vetoed(x, y facts) bool {
	switch {
	case x.birth != "" && y.birth != "" && x.birth != y.birth:
		return true
	case x.suffix != "" && y.suffix != "" && x.suffix != y.suffix:
		return true
	case x.source == y.source: // each record has its own MRN of its system
		return true
	case x.ssn != "" && y.ssn != "" && x.ssn != y.ssn:
		return true
	case x.birth != "" && x.birth == y.birth && sameName(x.family, x.familyTypo, y.family, y.familyTypo) &&
		contact(x, y) && x.given != "" && y.given != "" && !sameName(x.given, x.givenTypo, y.given, y.givenTypo) &&
		distance(plain(x.given), plain(y.given)) > 1:
		return true // the twins' veto (a nickname meets it)
	}
	return false
}

func isCertain(x, y facts) bool {
	if x.ssn != "" && x.ssn == y.ssn {
		return true
	}
	return x.given != "" && y.given != "" && sameName(x.given, x.givenTypo, y.given, y.givenTypo) &&
		sameName(x.family, x.familyTypo, y.family, y.familyTypo) &&
		x.birth != "" && x.birth == y.birth && contact(x, y)
}

func contact(x, y facts) bool {
	return x.phone != "" && x.phone == y.phone || x.email != "" && x.email == y.email ||
		x.address != "" && x.address == y.address
}

// sameName: the contract's name agreement, where the generator knows which
// of two written names carries a typo: the same name, or one typo in a
// name of five or more letters.
func sameName(a string, aTypo bool, b string, bTypo bool) bool {
	d := distance(plain(a), plain(b))
	switch {
	case !aTypo && !bTypo:
		return d == 0
	case aTypo && bTypo:
		return d == 0 // two typos: two letters apart, unless by chance the same
	}
	return d == 0 || d == 1 && min(letters(a), letters(b)) >= 5
}

func letters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}

// Obstacle counts the true pairs out of the contract's certain reach (not
// joined by Ceiling, not even through a third record) that one obstacle
// stands between.
type Obstacle struct {
	What  string
	Pairs int
}

// Obstacles tells why the true pairs that Ceiling leaves apart are out of
// the certain rule's reach: the pairs the probable tier must find. A pair
// counts under every obstacle between its two records; the list is sorted
// by the number of pairs, most first.
func Obstacles(pop Population) []Obstacle {
	group := make([]int, len(pop.Records))
	for g, recs := range ceilingGroups(pop) {
		for _, r := range recs {
			group[r] = g
		}
	}
	count := map[string]int{}
	for p, idx := range pop.byPerson() {
		for a := range idx {
			for b := a + 1; b < len(idx); b++ {
				i, j := idx[a], idx[b]
				if group[i] == group[j] {
					continue
				}
				for _, o := range obstacles(pop.People[p], pop.facts[i], pop.facts[j]) {
					count[o]++
				}
			}
		}
	}
	out := make([]Obstacle, 0, len(count))
	for what, n := range count {
		out = append(out, Obstacle{What: what, Pairs: n})
	}
	slices.SortFunc(out, func(a, b Obstacle) int { return cmp.Or(cmp.Compare(b.Pairs, a.Pairs), cmp.Compare(a.What, b.What)) })
	return out
}

// otherObstacle names what keeps a pair apart when nothing else does: a
// veto between two other records of the person (Ceiling joins no group
// across a veto).
const otherObstacle = "a veto with another record of the person"

func obstacles(p Individual, x, y facts) []string {
	var out []string
	add := func(cond bool, what string) {
		if cond {
			out = append(out, what)
		}
	}
	add(x.birth == "" || y.birth == "", "birth date missing")
	add(x.birth != "" && y.birth != "" && x.birth != y.birth && swapDayMonth(x.birth) == y.birth, "birth date: day and month swapped")
	add(x.birth != "" && y.birth != "" && x.birth != y.birth && swapDayMonth(x.birth) != y.birth, "birth date: a digit wrong")
	add(x.given == "" || y.given == "", "given name missing")
	nick := func(f facts) bool { return f.given != "" && !f.givenTypo && f.given != p.Given }
	add(nick(x) != nick(y) || nick(x) && x.given != y.given, "nickname (meets the twins' veto when the rest agrees)")
	add(x.given != "" && y.given != "" && (x.givenTypo || y.givenTypo) && !sameName(x.given, x.givenTypo, y.given, y.givenTypo),
		"given name typo (a name under 5 letters, or typos on both sides)")
	add(x.family != y.family && !x.familyTypo && !y.familyTypo, "new family name (marriage)")
	add((x.familyTypo || y.familyTypo) && !sameName(x.family, x.familyTypo, y.family, y.familyTypo),
		"family name typo (a name under 5 letters, or typos on both sides)")
	add(!contact(x, y), "no phone, e-mail or address agrees (missing, moved, unit in the first line)")
	add(x.source == y.source, "same system: two MRNs of one system (veto)")
	add(x.ssn != "" && y.ssn != "" && x.ssn != y.ssn, "SSN with a wrong digit (veto)")
	add(x.suffix != "" && y.suffix != "" && x.suffix != y.suffix, "suffix differs (veto)")
	add(len(out) == 0, otherObstacle)
	return out
}

// ObstaclesString lists the obstacles, one a line, with their share of
// the true pairs.
func ObstaclesString(os []Obstacle, truePairs int) string {
	var b strings.Builder
	for _, o := range os {
		fmt.Fprintf(&b, "  %6d  %5.1f %%  %s\n", o.Pairs, 100*float64(o.Pairs)/float64(truePairs), o.What)
	}
	return b.String()
}
