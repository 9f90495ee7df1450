package ehr

// MatchPeople groups the records of the same person, from one EHR or several,
// into people: by a member's links, then by the contract's certain rule;
// probable pairs stay apart and name each other in PossibleMatches.
func MatchPeople(records []Patient, links *LinkSet) []Person {
	return Merge(records) // TODO: being written
}
