package ehr

import (
	"math"
	"slices"
	"unicode/utf8"

	"github.com/hbollon/go-edlib"
)

// How two records compare (the contract's "Who is the same person"): the
// certain rule, its vetoes, and a Fellegi–Sunter score. The parameters
// and thresholds are in docs/matching.md, which a test keeps true.

// field is one piece of evidence two records are compared on.
type field uint8

// The fields, in the order reasons are listed.
const (
	fieldIdentifier field = iota
	fieldFamily
	fieldGiven
	fieldBirthDate
	fieldPhone
	fieldEmail
	fieldAddress
	fieldGender // weighs in the score; never a reason
	fieldCount
)

// reasonNames are the contract's names of the fields' agreements.
var reasonNames = [fieldCount]string{"identifier", "family", "given", "birthDate", "phone", "email", "address", ""}

// level is how a field compares.
type level uint8

const (
	missing  level = iota // one side (or both) has none
	disagree              // both have one, and they differ
	approx                // close: one typo, a nickname, a day/month swap
	exact                 // the same after normalising
)

// fsParam is a field's Fellegi–Sunter parameters: m, the chance that two
// records of one person agree (exactly, or only approximately), and u,
// the chance that two records of different people do.
type fsParam struct{ mExact, mApprox, uExact, uApprox float64 }

// fsParams are the parameters of each field (see docs/matching.md for
// where they come from).
var fsParams = [fieldCount]fsParam{
	fieldIdentifier: {0.98, 0, 1e-7, 0},
	fieldFamily:     {0.90, 0.05, 0.005, 0.002},
	fieldGiven:      {0.88, 0.08, 0.01, 0.003},
	fieldBirthDate:  {0.95, 0.03, 3e-5, 5e-4},
	fieldPhone:      {0.70, 0, 1e-4, 0},
	fieldEmail:      {0.75, 0, 1e-5, 0},
	fieldAddress:    {0.65, 0, 1e-4, 0},
	fieldGender:     {0.98, 0, 0.5, 0},
}

// fsWeights are log2(m/u) of each field and level: the evidence, in bits,
// that a comparison gives for one person; missing weighs nothing.
var fsWeights = func() (w [fieldCount][exact + 1]float64) {
	for f, p := range fsParams {
		w[f][exact] = math.Log2(p.mExact / p.uExact)
		if p.mApprox > 0 {
			w[f][approx] = math.Log2(p.mApprox / p.uApprox)
		}
		w[f][disagree] = math.Log2((1 - p.mExact - p.mApprox) / (1 - p.uExact - p.uApprox))
	}
	return w
}()

// Thresholds of the score.
const (
	// probableWeight is the least total weight (bits) of a probable pair;
	// the score is 0.5 there.
	probableWeight = 20.0
	// minTypoLen is the shortest name that may differ by one typo and
	// still agree (the contract: 5 letters).
	minTypoLen = 5
)

// comparison is what comparing two records found.
type comparison struct {
	levels  [fieldCount]level
	weight  float64 // the Fellegi–Sunter total, in bits
	certain bool    // the contract's certain rule holds and no veto does
	vetoed  bool    // a veto holds: never certain
	// probable: not certain, but the evidence is strong (a name or the
	// birth date agrees, and the weight reaches probableWeight).
	probable bool
}

// score maps the weight to 0..1: 1/(1+2^-(weight-probableWeight)).
func (c comparison) score() float64 {
	return 1 / (1 + math.Exp2(probableWeight-c.weight))
}

// reasons lists the fields that agree, "~" marking an approximate
// agreement.
func (c comparison) reasons() []string {
	out := make([]string, 0, fieldGender)
	for f := range fieldGender {
		switch c.levels[f] {
		case exact:
			out = append(out, reasonNames[f])
		case approx:
			out = append(out, reasonNames[f]+"~")
		}
	}
	return out
}

// compare compares two records' traits.
func compare(a, b *traits) comparison {
	var c comparison
	var idConflict bool
	c.levels[fieldIdentifier], idConflict = compareIDs(a, b)
	c.levels[fieldFamily] = compareNames(a.family, b.family)
	c.levels[fieldGiven] = compareNames(a.given, b.given)
	typoGiven := c.levels[fieldGiven] // before nicknames: the rule's agreement
	if c.levels[fieldGiven] == disagree && (a.givenFirst == b.givenFirst || sameNickname(a, b)) {
		c.levels[fieldGiven] = approx
	}
	c.levels[fieldBirthDate] = compareBirth(a.birth, b.birth)
	c.levels[fieldPhone] = compareSets(a.phones, b.phones)
	c.levels[fieldEmail] = compareSets(a.emails, b.emails)
	c.levels[fieldAddress] = compareSets(a.addresses, b.addresses)
	c.levels[fieldGender] = compareSets(nonEmpty(a.gender), nonEmpty(b.gender))
	for f, l := range c.levels {
		c.weight += fsWeights[f][l]
	}

	l := c.levels
	contact := l[fieldPhone] == exact || l[fieldEmail] == exact || l[fieldAddress] == exact
	byIdentifier := l[fieldIdentifier] == exact
	byDemographics := agrees(l[fieldFamily]) && agrees(typoGiven) && l[fieldBirthDate] == exact && contact
	suffixes := a.suffix != "" && b.suffix != "" && a.suffix != b.suffix
	twins := l[fieldBirthDate] == exact && agrees(l[fieldFamily]) && typoGiven == disagree &&
		(l[fieldPhone] == exact || l[fieldAddress] == exact)
	c.vetoed = l[fieldBirthDate] == disagree || l[fieldBirthDate] == approx || suffixes ||
		idConflict || twins ||
		// A shared identifier on records whose names both differ: a
		// mistyped or reused identifier, not one person.
		(l[fieldFamily] == disagree && l[fieldGiven] == disagree)
	if suffixes {
		c.weight += suffixWeight
	}
	c.certain = (byIdentifier || byDemographics) && !c.vetoed
	namesOrBirth := l[fieldGiven] >= approx || l[fieldBirthDate] >= approx
	c.probable = !c.certain && namesOrBirth && c.weight >= probableWeight
	return c
}

// suffixWeight is the evidence against one person of two different
// generational suffixes (Jr and Sr: father and son).
const suffixWeight = -10.0

// agrees reports whether a name comparison counts as agreement for the
// certain rule: the same, or one typo apart.
func agrees(l level) bool { return l == exact || l == approx }

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// compareNames compares two folded names: exact, approx when both have
// at least minTypoLen letters and one typo (an insertion, deletion,
// substitution or swap of neighbours) tells them apart.
func compareNames(a, b string) level {
	switch {
	case a == "" || b == "":
		return missing
	case a == b:
		return exact
	case oneTypo(a, b):
		return approx
	}
	return disagree
}

// oneTypo reports whether a and b, both of at least minTypoLen letters,
// are one edit apart (optimal string alignment distance 1).
func oneTypo(a, b string) bool {
	la, lb := utf8.RuneCountInString(a), utf8.RuneCountInString(b)
	if min(la, lb) < minTypoLen || max(la, lb)-min(la, lb) > 1 {
		return false
	}
	// One edit leaves at most two neighbouring characters (bytes, at most
	// a few) unshared by the common prefix and suffix: most pairs of
	// different names are told apart here, before the library's matrix.
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	window := 2 // characters: a swap of neighbours
	if !isASCII(a) || !isASCII(b) {
		window *= utf8.UTFMax
	}
	if min(len(a), len(b))-prefix-suffix > window {
		return false
	}
	return edlib.OSADamerauLevenshteinDistance(a, b) == 1
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// sameNickname reports whether the first given names may name one person
// (Bill and William).
func sameNickname(a, b *traits) bool {
	switch {
	case a.nicknames == nil:
		return slices.Contains(b.nicknames, a.givenFirst)
	case b.nicknames == nil:
		return slices.Contains(a.nicknames, b.givenFirst)
	}
	for _, n := range a.nicknames {
		if slices.Contains(b.nicknames, n) {
			return true
		}
	}
	return false
}

// compareBirth compares two birth dates (YYYY-MM-DD): approx when the day
// and month are swapped, or one digit differs, or two neighbouring digits
// are swapped.
func compareBirth(a, b string) level {
	switch {
	case a == "" || b == "":
		return missing
	case a == b:
		return exact
	case a[:5] == b[:5] && a[5:7] == b[8:10] && a[8:10] == b[5:7]:
		return approx
	}
	n, first, second := 0, 0, 0
	for i := range len(a) {
		if a[i] != b[i] {
			n++
			first, second = second, i
		}
	}
	if n == 2 {
		first, second = min(first, second), max(first, second)
	}
	switch {
	case n == 1:
		return approx
	case n == 2 && second == first+1 && a[first] == b[second] && a[second] == b[first]:
		return approx
	}
	return disagree
}

// compareSets compares two sets of normalised values: exact when they
// share one, disagree when both have some and share none.
func compareSets(a, b []string) level {
	if len(a) == 0 || len(b) == 0 {
		return missing
	}
	for _, v := range a {
		if slices.Contains(b, v) {
			return exact
		}
	}
	return disagree
}

// compareIDs compares identifiers: exact when the records share one (same
// system and value); disagree when they have identifiers of one system
// and share no value of it; else missing. conflict is whether some system
// both have identifiers of has no value in common (a veto, even beside a
// shared identifier of another system).
func compareIDs(a, b *traits) (l level, conflict bool) {
	l = missing
	for _, sys := range a.idSystems {
		if !slices.Contains(b.idSystems, sys) {
			continue
		}
		common := false
		for _, v := range a.ids {
			if len(v) > len(sys) && v[len(sys)] == '|' && v[:len(sys)] == sys && slices.Contains(b.ids, v) {
				common = true
				break
			}
		}
		if common {
			l = exact
		} else {
			conflict = true
		}
	}
	if conflict && l != exact {
		l = disagree
	}
	return l, conflict
}
