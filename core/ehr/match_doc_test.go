package ehr

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// matchingTable writes the Fellegi–Sunter parameters and weights as
// docs/matching.md shows them.
func matchingTable() string {
	var b strings.Builder
	b.WriteString("| field | m exact | m approx | u exact | u approx | weight exact | weight approx | weight disagree |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|\n")
	names := reasonNames
	names[fieldGender] = "gender"
	for f, p := range fsParams {
		w := fsWeights[f]
		approxM, approxU, approxW := "—", "—", "—"
		if p.mApprox > 0 {
			approxM, approxU, approxW = fmt.Sprint(p.mApprox), fmt.Sprint(p.uApprox), fmt.Sprintf("%+.1f", w[approx])
		}
		fmt.Fprintf(&b, "| %s | %v | %s | %v | %s | %+.1f | %s | %+.1f |\n", names[f], p.mExact, approxM, p.uExact, approxU, w[exact], approxW, w[disagree])
	}
	return b.String()
}

// docs/matching.md states the matcher's parameters and thresholds; they
// are the code's.
func TestDocs_StateTheMatchingParameters(t *testing.T) {
	raw, err := os.ReadFile("../../docs/matching.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	if !strings.Contains(page, matchingTable()) {
		t.Errorf("docs/matching.md's table is not the code's; it should read:\n%s", matchingTable())
	}
	for _, s := range []string{
		fmt.Sprintf("`score` = 1/(1 + 2^(%g − W))", probableWeight),
		fmt.Sprintf("W ≥ %g bits", probableWeight),
		fmt.Sprintf("add −%g", -suffixWeight),
		fmt.Sprintf("both names have %d letters or more", minTypoLen),
	} {
		if !strings.Contains(page, s) {
			t.Errorf("docs/matching.md does not say %q", s)
		}
	}
}
