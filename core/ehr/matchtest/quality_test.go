package matchtest

import (
	"testing"

	"github.com/carebridge/carebridge/core/ehr"
)

// The quality floors of matching (the targets). The issue's
// certain recall of 0.90 is out of reach of any matcher that keeps to the
// contract's certain rule on this population (a birth date missing on one
// side, a nickname, a new family name, a moved patient without another
// shared contact: Obstacles counts them); Ceiling measures the most such
// a matcher can reach, and the floor is a share of it.
const (
	floorCertainPrecision = 0.999
	floorCertainOfCeiling = 0.99
	floorAnyRecall        = 0.98
)

// matchAnswers runs match on each answer of pop (Answers) and measures the
// people it forms.
func matchAnswers(pop Population, match func([]ehr.Patient, *ehr.LinkSet) []ehr.Person) Quality {
	var people [][]ehr.Person
	for _, a := range Answers(pop) {
		people = append(people, match(a, nil))
	}
	return EvaluateAnswers(pop, people)
}

// TestMatchPeople_QualityFloor asserts the quality floors of MatchPeople on
// the answers of name searches over a seeded population of 3,000 people.
// The figures are deterministic: the same seed, the same records, the
// same people.
func TestMatchPeople_QualityFloor(t *testing.T) {
	pop := Generate(2026, 3000)
	q := matchAnswers(pop, ehr.MatchPeople)
	t.Logf("MatchPeople on %d answers:\n%s", len(Answers(pop)), q)
	ceiling := Evaluate(pop, Ceiling(pop))
	t.Logf("the most a matcher keeping to the contract's certain rule can reach: certain recall %.4f (%d of %d true pairs)",
		ceiling.CertainRecall, ceiling.Certain.True, ceiling.TruePairs)

	if q.CertainPrecision < floorCertainPrecision {
		t.Errorf("certain precision %.4f, want at least %.3f", q.CertainPrecision, floorCertainPrecision)
	}
	if q.CertainRecall < floorCertainOfCeiling*ceiling.CertainRecall {
		t.Errorf("certain recall %.4f, want at least %.2f of the ceiling %.4f", q.CertainRecall, floorCertainOfCeiling, ceiling.CertainRecall)
	}
	if q.AnyRecall < floorAnyRecall {
		t.Errorf("certain + probable recall %.4f, want at least %.2f", q.AnyRecall, floorAnyRecall)
	}
	for _, k := range Kinds {
		if c := q.HardNegatives[k]; c.Certain != 0 {
			t.Errorf("%d certain links among the %d record pairs of %s, want none", c.Certain, c.Pairs, k)
		}
	}
}
