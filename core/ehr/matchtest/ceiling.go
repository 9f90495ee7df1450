package matchtest

import (
	"fmt"
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
	byPerson := make([][]int, len(pop.People))
	for i, f := range pop.facts {
		byPerson[f.person] = append(byPerson[f.person], i)
	}
	var out []ehr.Person
	for p, idx := range byPerson {
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
		for g, recs := range groups {
			person := ehr.Person{ID: fmt.Sprintf("ceiling-%d-%d", p, g), PossibleMatches: []ehr.PossibleMatch{}}
			for _, r := range recs {
				person.Sources = append(person.Sources, ehr.SourceRef{Source: pop.Records[r].Source, PatientID: pop.Records[r].ID})
			}
			out = append(out, person)
		}
	}
	return out
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
