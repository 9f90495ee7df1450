package matchtest

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/carebridge/carebridge/core/ehr"
)

// Quality is the pair-level quality of the people a matcher formed.
//
// A pair is two records. The true pairs are the pairs of records of the
// same true person (Population.Truth). The certain pairs are the pairs of
// records inside one person of more than one record (merged: certain or
// confirmed); the probable pairs are the pairs of a record of a person and
// a record of one of its PossibleMatches (each pair of people once,
// whichever of the two names the other). A pair is never both.
type Quality struct {
	People    int // true people of the population
	Records   int // records of the population
	TruePairs int

	Certain  Pairs
	Probable Pairs

	CertainPrecision, CertainRecall float64 // of the certain pairs
	AnyPrecision, AnyRecall         float64 // of the certain and probable pairs together

	// HardNegatives counts, for each kind, the record pairs of partners
	// (records of the two people of a hard negative) and how many of them
	// the matcher made certain or probable.
	HardNegatives map[Kind]HardCounts

	Unknown int // records of the people evaluated that the population does not hold
}

// Pairs counts the predicted pairs of a tier and, of them, the true ones.
type Pairs struct {
	Predicted, True int
}

// HardCounts counts the record pairs of the hard negatives of one kind.
type HardCounts struct {
	Pairs, Certain, Probable int
}

// Evaluate measures people (the matcher's output on pop's records, or on
// any subset of them) against pop's truth. Every true pair of pop counts:
// one whose records are not among people is missed.
func Evaluate(pop Population, people []ehr.Person) Quality {
	return EvaluateAnswers(pop, [][]ehr.Person{people})
}

// EvaluateAnswers measures the people of several answers at once (the
// matcher's output of each answer of Answers); a PossibleMatch names a
// person of its own answer.
func EvaluateAnswers(pop Population, answers [][]ehr.Person) Quality {
	q := Quality{People: len(pop.People), Records: len(pop.Records), HardNegatives: map[Kind]HardCounts{}}
	s := newScorer(pop, &q)
	for _, people := range answers {
		s.countUnknown(people)
		s.countCertain(people)
		s.countProbable(people)
	}
	q.CertainPrecision = ratio(q.Certain.True, q.Certain.Predicted)
	q.CertainRecall = ratio(q.Certain.True, q.TruePairs)
	q.AnyPrecision = ratio(q.Certain.True+q.Probable.True, q.Certain.Predicted+q.Probable.Predicted)
	q.AnyRecall = ratio(q.Certain.True+q.Probable.True, q.TruePairs)
	return q
}

// scorer counts the pairs of the people of answers into q against pop's
// truth.
type scorer struct {
	pop  Population
	kind map[[2]int]Kind // the kind of each hard negative, by its people (lower first)
	q    *Quality
}

// newScorer counts what the population holds before any answer is seen:
// its true pairs and the record pairs of its hard negatives.
func newScorer(pop Population, q *Quality) scorer {
	recordsOf := make([]int, len(pop.People))
	for _, p := range pop.Truth {
		recordsOf[p]++
	}
	for _, n := range recordsOf {
		q.TruePairs += n * (n - 1) / 2
	}
	kind := map[[2]int]Kind{}
	for _, h := range pop.HardNegatives {
		kind[[2]int{h.A, h.B}] = h.Kind
		c := q.HardNegatives[h.Kind]
		c.Pairs += recordsOf[h.A] * recordsOf[h.B]
		q.HardNegatives[h.Kind] = c
	}
	return scorer{pop: pop, kind: kind, q: q}
}

// truthOf returns the true people of refs: how many records of each.
func (s scorer) truthOf(refs []ehr.SourceRef) map[int]int {
	m := map[int]int{}
	for _, r := range refs {
		if p, ok := s.pop.Truth[r]; ok {
			m[p]++
		}
	}
	return m
}

// hard returns the kind of hard negative that true people a and b are, if
// they are one.
func (s scorer) hard(a, b int) (Kind, bool) {
	k, ok := s.kind[[2]int{min(a, b), max(a, b)}]
	return k, ok
}

// countUnknown counts the records of people that the population does not
// hold.
func (s scorer) countUnknown(people []ehr.Person) {
	for _, p := range people {
		for _, r := range p.Sources {
			if _, ok := s.pop.Truth[r]; !ok {
				s.q.Unknown++
			}
		}
	}
}

// countCertain counts the pairs inside each person of people: predicted,
// true, and those of partners of a hard negative.
func (s scorer) countCertain(people []ehr.Person) {
	for _, p := range people {
		n := len(p.Sources)
		s.q.Certain.Predicted += n * (n - 1) / 2
		t := s.truthOf(p.Sources)
		for a, na := range t {
			s.q.Certain.True += na * (na - 1) / 2
			for b, nb := range t {
				if k, ok := s.hard(a, b); ok && a < b {
					c := s.q.HardNegatives[k]
					c.Certain += na * nb
					s.q.HardNegatives[k] = c
				}
			}
		}
	}
}

// countProbable counts the pairs between each person of people and its
// possible matches, each pair of people once: predicted, true, and those
// of partners of a hard negative.
func (s scorer) countProbable(people []ehr.Person) {
	byID := map[string]int{}
	for i, p := range people {
		byID[p.ID] = i
	}
	seen := map[[2]int]bool{}
	for i, p := range people {
		for _, pm := range p.PossibleMatches {
			j, ok := byID[pm.PersonID]
			if !ok || j == i || seen[[2]int{min(i, j), max(i, j)}] {
				continue
			}
			seen[[2]int{min(i, j), max(i, j)}] = true
			o := people[j]
			s.q.Probable.Predicted += len(p.Sources) * len(o.Sources)
			tp, to := s.truthOf(p.Sources), s.truthOf(o.Sources)
			for a, na := range tp {
				s.q.Probable.True += na * to[a]
				for b, nb := range to {
					if k, ok := s.hard(a, b); ok {
						c := s.q.HardNegatives[k]
						c.Probable += na * nb
						s.q.HardNegatives[k] = c
					}
				}
			}
		}
	}
}

// ratio is a/b, 1 when b is 0 (no pair predicted: none wrong; no true
// pair: none missed).
func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// HardCertain is the number of certain pairs among the hard negatives of
// every kind.
func (q Quality) HardCertain() int {
	n := 0
	for _, c := range q.HardNegatives {
		n += c.Certain
	}
	return n
}

// String is q as a table.
func (q Quality) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "people %d, records %d, true pairs %d\n", q.People, q.Records, q.TruePairs)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "links\tpairs\ttrue\tprecision\trecall\t")
	fmt.Fprintf(w, "certain\t%d\t%d\t%.4f\t%.4f\t\n", q.Certain.Predicted, q.Certain.True, q.CertainPrecision, q.CertainRecall)
	fmt.Fprintf(w, "certain + probable\t%d\t%d\t%.4f\t%.4f\t\n", q.Certain.Predicted+q.Probable.Predicted,
		q.Certain.True+q.Probable.True, q.AnyPrecision, q.AnyRecall)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "hard negatives\trecord pairs\tcertain\tprobable\t")
	for _, k := range Kinds {
		c := q.HardNegatives[k]
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t\n", k, c.Pairs, c.Certain, c.Probable)
	}
	w.Flush()
	if q.Unknown > 0 {
		fmt.Fprintf(&b, "records not in the population: %d\n", q.Unknown)
	}
	return b.String()
}
