package matchtest

import (
	"reflect"
	"testing"

	"github.com/carebridge/carebridge/core/ehr"
)

// TestEvaluate_HandCounted checks Evaluate on five true people whose
// figures are counted by hand below.
func TestEvaluate_HandCounted(t *testing.T) {
	ref := func(id string) ehr.SourceRef { return ehr.SourceRef{Source: "ehr-a", PatientID: id} }
	truth := map[string]int{"a1": 0, "a2": 0, "a3": 0, "b1": 1, "b2": 1, "c1": 2, "d1": 3, "e1": 4}
	pop := Population{Truth: map[ehr.SourceRef]int{}, People: make([]Individual, 5),
		HardNegatives: []HardNegative{{A: 2, B: 3, Kind: Twins}, {A: 1, B: 4, Kind: Namesake}}}
	for _, id := range []string{"a1", "a2", "a3", "b1", "b2", "c1", "d1", "e1"} {
		pop.Records = append(pop.Records, ehr.Patient{Source: "ehr-a", ID: id})
		pop.Truth[ref(id)] = truth[id]
	}
	person := func(id string, records []string, possible ...string) ehr.Person {
		p := ehr.Person{ID: id, PossibleMatches: []ehr.PossibleMatch{}}
		for _, r := range records {
			p.Sources = append(p.Sources, ref(r))
		}
		for _, o := range possible {
			p.PossibleMatches = append(p.PossibleMatches, ehr.PossibleMatch{PersonID: o})
		}
		return p
	}
	people := []ehr.Person{
		person("P1", []string{"a1", "a2", "b1"}, "P2"), // certain: a1-a2 (true), a1-b1, a2-b1
		person("P2", []string{"a3"}, "P1"),             // probable with P1 (once): a3-a1, a3-a2 (true), a3-b1
		person("P3", []string{"b2"}, "P1", "gone"),     // probable with P1: b2-a1, b2-a2, b2-b1 (true); "gone" is no one
		person("P4", []string{"c1", "d1"}),             // certain: c1-d1, twins
		person("P5", []string{"e1"}, "P3"),             // probable with P3: e1-b2, namesakes
		person("P6", []string{"x9"}),                   // not in the population
	}

	q := Evaluate(pop, people)
	want := Quality{
		People: 5, Records: 8,
		TruePairs: 4, // a1-a2, a1-a3, a2-a3, b1-b2
		Certain:   Pairs{Predicted: 4, True: 1},
		Probable:  Pairs{Predicted: 7, True: 3},
		// certain: 1 of 4 right, 1 of 4 true pairs found; with probable:
		// 4 of 11 right, every true pair found.
		CertainPrecision: 0.25, CertainRecall: 0.25, AnyPrecision: 4.0 / 11, AnyRecall: 1,
		HardNegatives: map[Kind]HardCounts{
			Twins:    {Pairs: 1, Certain: 1},
			Namesake: {Pairs: 2, Probable: 1}, // b1-e1, b2-e1
		},
		Unknown: 1,
	}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("Evaluate =\n%+v\nwant\n%+v", q, want)
	}
	if q.HardCertain() != 1 {
		t.Errorf("HardCertain = %d, want 1", q.HardCertain())
	}

	t.Run("nothing merged, nothing suggested", func(t *testing.T) {
		var alone []ehr.Person
		for _, r := range pop.Records {
			alone = append(alone, person(r.ID, []string{r.ID}))
		}
		q := Evaluate(pop, alone)
		if q.CertainPrecision != 1 || q.CertainRecall != 0 || q.AnyRecall != 0 || q.HardCertain() != 0 {
			t.Errorf("Evaluate of people of one record each = %+v", q)
		}
	})

	t.Run("possible matches resolve inside their answer", func(t *testing.T) {
		q := EvaluateAnswers(pop, [][]ehr.Person{
			{person("X", []string{"a1", "a2"}), person("Y", []string{"a3"}, "X")},
			{person("X", []string{"b1"}), person("Y", []string{"b2"}, "X")},
		})
		if q.Certain != (Pairs{Predicted: 1, True: 1}) || q.Probable != (Pairs{Predicted: 3, True: 3}) || q.AnyRecall != 1 {
			t.Errorf("EvaluateAnswers = %+v", q)
		}
	})
}

// TestCeiling_JoinsOnlyTruePairs checks that the contract's ceiling never
// joins two people and leaves hard negatives apart.
func TestCeiling_JoinsOnlyTruePairs(t *testing.T) {
	pop := Generate(5, 2000)
	q := Evaluate(pop, Ceiling(pop))
	if q.CertainPrecision != 1 || q.HardCertain() != 0 {
		t.Errorf("ceiling: %v", q)
	}
	if q.CertainRecall < 0.5 || q.CertainRecall > 0.95 {
		t.Errorf("ceiling recall %.3f: the generator's corruption changed a lot", q.CertainRecall)
	}
	t.Logf("the contract's ceiling:\n%s", q)

	missed := q.TruePairs - q.Certain.True
	listed := 0
	for _, o := range Obstacles(pop) {
		listed += o.Pairs
	}
	if listed < missed {
		t.Errorf("obstacles of %d pairs, %d pairs missed", listed, missed)
	}
	t.Logf("obstacles:\n%s", ObstaclesString(Obstacles(pop), q.TruePairs))
}
