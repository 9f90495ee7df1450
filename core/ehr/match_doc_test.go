package ehr

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// matchingTable writes the Fellegi–Sunter parameters and weights as the
// README's matching section shows them.
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

// The README states the matcher's parameters and thresholds; they are
// the code's.
func TestREADME_StatesTheMatchingParameters(t *testing.T) {
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if !strings.Contains(readme, matchingTable()) {
		t.Errorf("the README's matching table is not the code's; it should read:\n%s", matchingTable())
	}
	for _, s := range []string{
		fmt.Sprintf("`score` = 1/(1 + 2^(%g − W))", probableWeight),
		fmt.Sprintf("W ≥ %g bits", probableWeight),
		fmt.Sprintf("add −%g", -suffixWeight),
		fmt.Sprintf("both names have %d letters or more", minTypoLen),
	} {
		if !strings.Contains(readme, s) {
			t.Errorf("the README does not say %q", s)
		}
	}
}
