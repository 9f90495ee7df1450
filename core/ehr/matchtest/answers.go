package matchtest

import (
	"cmp"
	"slices"
	"strings"

	"github.com/carebridge/carebridge/core/ehr"
)

// Answers groups the population's records into the answers of name
// searches, the way the matcher meets them (it matches one answer, never a
// whole population): one answer per family name at birth (lower-cased), with
// every record of each person whose family name at birth it is, however that
// record writes the name (with a typo, a new family name after marriage, a
// suffix in the family string). So every true pair lies inside one answer
// and is evaluable, and each hard negative's partners (who share the family
// name by construction) meet in the same answer. A record appears in one
// answer only: a real search for the new family name of a married woman
// would also return her renamed record among that family's people; that
// second chance of a wrong merge is not modelled. Answers are sorted by
// their family name; records keep the population's order (each system's
// records in that system's shuffled order).
func Answers(pop Population) [][]ehr.Patient {
	index := map[string]int{}
	var keys []string
	var answers [][]ehr.Patient
	for i, rec := range pop.Records {
		key := strings.ToLower(pop.People[pop.facts[i].person].Family)
		a, ok := index[key]
		if !ok {
			a = len(answers)
			index[key] = a
			keys = append(keys, key)
			answers = append(answers, nil)
		}
		answers[a] = append(answers[a], rec)
	}
	order := make([]int, len(answers))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(keys[a], keys[b]) })
	out := make([][]ehr.Patient, len(order))
	for i, a := range order {
		out[i] = answers[a]
	}
	return out
}

// Answer is one large answer as a broad name search returns it: at most
// perSystem records of each system, taken from the largest answers of the
// population first (so most records share a few family names, and some of
// a person's records are cut off by a system's page as in a real answer).
func Answer(pop Population, perSystem int) []ehr.Patient {
	answers := Answers(pop)
	slices.SortStableFunc(answers, func(a, b []ehr.Patient) int { return cmp.Compare(len(b), len(a)) })
	count := map[string]int{}
	var out []ehr.Patient
	for _, a := range answers {
		for _, rec := range a {
			if count[rec.Source] < perSystem {
				count[rec.Source]++
				out = append(out, rec)
			}
		}
		if len(out) == perSystem*len(Systems) {
			break
		}
	}
	return out
}
