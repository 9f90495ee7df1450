package matchtest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// BenchmarkMatchAnswer times MatchPeople on one answer of 3 systems × 100
// records as a broad name search returns it (most records share a few
// family names), and reports the median and 99th percentile of a call.
// It makes at least 3,000 calls whatever b.N is (make bench runs it once),
// cycling over answers drawn from eight populations.
func BenchmarkMatchAnswer(b *testing.B) {
	var answers [][]ehr.Patient
	for seed := range uint64(8) {
		answers = append(answers, Answer(Generate(100+seed, 5000), 100))
	}
	for _, a := range answers[:2] { // warm up
		ehr.MatchPeople(a, nil)
	}
	calls := max(b.N, 3000)
	took := make([]time.Duration, calls)
	b.ResetTimer()
	for i := range calls {
		start := time.Now()
		ehr.MatchPeople(answers[i%len(answers)], nil)
		took[i] = time.Since(start)
	}
	b.StopTimer()
	var total time.Duration
	for _, d := range took {
		total += d
	}
	slices.Sort(took)
	at := func(p float64) float64 { return float64(took[int(p*float64(calls-1))].Nanoseconds()) / 1e3 }
	b.ReportMetric(float64(total.Nanoseconds())/float64(calls), "ns/op")
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(len(answers[0])), "records/answer")
}

// BenchmarkMatchQuality prints the quality of MatchPeople on the answers
// of name searches over a population of 20,000 people, beside the most
// the contract's certain rule can reach on it (see Ceiling).
func BenchmarkMatchQuality(b *testing.B) {
	pop := Generate(20_000, 20_000)
	answers := Answers(pop)
	largest := 0
	for _, a := range answers {
		largest = max(largest, len(a))
	}
	var q Quality
	for range b.N {
		q = matchAnswers(pop, ehr.MatchPeople)
	}
	b.StopTimer()
	ceiling := Evaluate(pop, Ceiling(pop))
	fmt.Printf("MatchPeople on %d answers of name searches (the largest %d records), seed 20000:\n%s", len(answers), largest, q)
	fmt.Printf("the contract's certain rule can reach at most: certain recall %.4f (%d of %d true pairs)\n",
		ceiling.CertainRecall, ceiling.Certain.True, ceiling.TruePairs)
	fmt.Printf("what keeps the other true pairs out of its reach (the probable tier's work; a pair counts under each of its obstacles):\n%s",
		ObstaclesString(Obstacles(pop), ceiling.TruePairs))
	fmt.Printf("certain recall %.4f is %.4f of that ceiling (the issue's 0.90 is above the ceiling on this population)\n",
		q.CertainRecall, q.CertainRecall/ceiling.CertainRecall)
	fmt.Printf("floors: certain precision >= %.3f, certain recall >= %.2f of the ceiling, certain + probable recall >= %.2f, no certain link among hard negatives\n",
		floorCertainPrecision, floorCertainOfCeiling, floorAnyRecall)
	b.ReportMetric(q.CertainPrecision, "certain-precision")
	b.ReportMetric(q.CertainRecall, "certain-recall")
	b.ReportMetric(q.AnyRecall, "any-recall")
	b.ReportMetric(float64(q.HardCertain()), "hard-negatives-certain")
}
