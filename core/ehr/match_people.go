package ehr

import (
	"cmp"
	"encoding/hex"
	"hash/fnv"
	"slices"
	"strings"
)

// The people an answer's clusters become: their order, their match, their
// possible matches, their merged fields and ids.

// people builds one Person per cluster, with its match and its possible
// matches among pairs, sorted.
func (m *matcher) people(pairs []pair) []Person {
	roots := m.sortedRoots()
	people := make([]Person, len(roots))
	at := make([]int, len(m.records)) // root → index in people
	for k, r := range roots {
		people[k] = person(m.records, m.of(r.root), r.id)
		people[k].Match = m.match(r.root, len(m.of(r.root)))
		at[r.root] = k
	}
	// The strongest pair between two people, unless a link keeps them apart.
	best := map[[2]int]comparison{}
	for _, p := range pairs {
		a, b := m.find(p.i), m.find(p.j)
		if a == b || !(p.c.probable || p.c.certain) || m.keptApart(a, b) {
			continue
		}
		k := [2]int{min(a, b), max(a, b)}
		if old, ok := best[k]; !ok || p.c.weight > old.weight {
			best[k] = p.c
		}
	}
	for k, c := range best {
		pa, pb := &people[at[k[0]]], &people[at[k[1]]]
		pa.PossibleMatches = append(pa.PossibleMatches, PossibleMatch{PersonID: pb.ID, Score: c.score(), Reasons: c.reasons()})
		pb.PossibleMatches = append(pb.PossibleMatches, PossibleMatch{PersonID: pa.ID, Score: c.score(), Reasons: c.reasons()})
	}
	for k := range people {
		slices.SortFunc(people[k].PossibleMatches, func(a, b PossibleMatch) int {
			return cmp.Or(cmp.Compare(b.Score, a.Score), cmp.Compare(a.PersonID, b.PersonID))
		})
	}
	return people
}

// root is a cluster's root and its person's id.
type root struct {
	root int
	id   string
}

// sortedRoots are the clusters' roots in the order of their people: by
// family name, given names (case aside), birth date and id, each read once
// from the cluster's first record (its birth date, the first known), so
// that the people are built in their order.
func (m *matcher) sortedRoots() []root {
	ks := m.keys[:0]
	for i := range m.records {
		if m.find(i) == i {
			ks = append(ks, sortKey{root: i})
		}
	}
	refs := make([]SourceRef, 0, 4)
	for x := range ks {
		k := &ks[x]
		head := m.records[k.root]
		k.family = lowerUnlessASCII(head.Name.Family)
		switch len(head.Name.Given) {
		case 0:
		case 1:
			k.given = lowerUnlessASCII(head.Name.Given[0])
		default:
			k.given = lowerUnlessASCII(strings.Join(head.Name.Given, " "))
		}
		refs = refs[:0]
		for _, j := range m.of(k.root) {
			k.birth = cmp.Or(k.birth, m.records[j].BirthDate)
			refs = append(refs, SourceRef{Source: m.records[j].Source, PatientID: m.records[j].ID})
		}
		k.id = personID(refs)
	}
	// An answer holds few distinct names (a name search's): each is
	// ranked once, and the people are sorted by ranks.
	m.keys = ks
	m.familyRanks = m.rank(ks, m.familyRanks, func(k *sortKey) string { return k.family })
	m.givenRanks = m.rank(ks, m.givenRanks, func(k *sortKey) string { return k.given })
	family, given := m.familyRanks, m.givenRanks
	m.order = sized(m.order, len(ks))
	order := m.order
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(x, y int32) int {
		if c := cmp.Compare(family[x], family[y]); c != 0 {
			return c
		}
		if c := cmp.Compare(given[x], given[y]); c != 0 {
			return c
		}
		a, b := &ks[x], &ks[y]
		return cmp.Or(strings.Compare(a.birth, b.birth), strings.Compare(a.id, b.id))
	})
	roots := make([]root, len(ks))
	for i, o := range order {
		roots[i] = root{root: ks[o].root, id: ks[o].id}
	}
	return roots
}

// sortKey is what people are sorted by, read from a cluster.
type sortKey struct {
	family, given, birth, id string
	root                     int
}

// rank sets ranks[i] (resized to len(keys)) to the rank of keys[i]'s name
// among the distinct names of keys in compareLower's order (names equal
// but for case, one rank).
func (m *matcher) rank(keys []sortKey, ranks []int32, name func(*sortKey) string) []int32 {
	clear(m.rankIndex)
	distinct := m.distinct[:0]
	for i := range keys {
		n := name(&keys[i])
		if _, ok := m.rankIndex[n]; !ok {
			m.rankIndex[n] = 0
			distinct = append(distinct, n)
		}
	}
	slices.SortFunc(distinct, compareLower)
	r := int32(0)
	for i, n := range distinct {
		if i > 0 && compareLower(distinct[i-1], n) != 0 {
			r++
		}
		m.rankIndex[n] = r
	}
	m.distinct = distinct
	ranks = sized(ranks, len(keys))
	for i := range keys {
		ranks[i] = m.rankIndex[name(&keys[i])]
	}
	return ranks
}

// lowerUnlessASCII is s in lower case when it is not ASCII (compareLower
// lowers ASCII itself, and a lower-case string again without copying it).
func lowerUnlessASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// compareLower compares a and b in lower case (strings.ToLower's order),
// without making lower-case copies of ASCII strings.
func compareLower(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		if x >= 0x80 || y >= 0x80 {
			return strings.Compare(strings.ToLower(a[i:]), strings.ToLower(b[i:]))
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return cmp.Compare(x, y)
		}
	}
	return cmp.Compare(len(a), len(b))
}

// match is the Match of the cluster of root, of n records.
func (m *matcher) match(root, n int) *Match {
	if n < 2 {
		return nil
	}
	var reasons []string
	score := 1.0
	grade := Certain
	if m.confirmed[root] {
		grade, reasons = Confirmed, []string{"link"}
	}
	var seen [fieldCount]level
	for _, c := range m.edges[root] {
		if grade == Certain {
			score = min(score, c.score())
		}
		for f, l := range c.levels {
			seen[f] = max(seen[f], l)
		}
	}
	reasons = append(reasons, comparison{levels: seen}.reasons()...)
	return &Match{Grade: grade, Score: score, Reasons: reasons}
}

// person merges the records idx (in the order given) into the Person id:
// the first record's name, birth date and gender (blanks filled from the
// others), every record's identifiers, telecom and addresses once.
func person(records []Patient, idx []int, id string) Person {
	head := records[idx[0]]
	p := Person{Name: head.Name, BirthDate: head.BirthDate, Gender: head.Gender, LastUpdated: head.LastUpdated,
		PossibleMatches: []PossibleMatch{}, Sources: make([]SourceRef, 0, len(idx))}
	if p.Name.Given == nil {
		p.Name.Given = []string{}
	}
	// The head's lists as they are when they hold nothing twice (most
	// people are one record), else merged.
	p.Identifiers, p.Telecom, p.Address = distinct(head.Identifiers), distinct(head.Telecom), distinctAddresses(head.Address)
	for k, i := range idx {
		r := records[i]
		p.Sources = append(p.Sources, SourceRef{Source: r.Source, PatientID: r.ID})
		if k == 0 {
			continue
		}
		p.Identifiers = appendNew(slices.Clip(p.Identifiers), r.Identifiers...)
		p.Telecom = appendNew(slices.Clip(p.Telecom), r.Telecom...)
		p.Address = appendAddresses(slices.Clip(p.Address), r.Address...)
		if r.LastUpdated.After(p.LastUpdated) {
			p.LastUpdated = r.LastUpdated
		}
		p.BirthDate = cmp.Or(p.BirthDate, r.BirthDate)
		p.Gender = cmp.Or(p.Gender, r.Gender)
	}
	p.ID = id
	p.Identifiers = nonNil(p.Identifiers)
	p.Telecom = nonNil(p.Telecom)
	p.Address = nonNil(p.Address)
	return p
}

// distinct is s when nothing in it is there twice, else its values once
// each (a new slice: the EHR's own stays as it was).
func distinct[T comparable](s []T) []T {
	for i, v := range s {
		if slices.Contains(s[:i], v) {
			return appendNew(nil, s...)
		}
	}
	return s
}

// distinctAddresses is as distinct, for addresses (whose lines are never
// nil in a Person).
func distinctAddresses(as []Address) []Address {
	for i, a := range as {
		if a.Line == nil || slices.ContainsFunc(as[:i], func(b Address) bool { return sameAddress(a, b) }) {
			return appendAddresses(nil, as...)
		}
	}
	return as
}

func sameAddress(a, b Address) bool {
	return slices.Equal(a.Line, b.Line) && a.City == b.City && a.State == b.State && a.PostalCode == b.PostalCode && a.Country == b.Country
}

// personID hashes the records of a person, sorted.
func personID(refs []SourceRef) string {
	sorted := refs
	if len(refs) > 1 {
		sorted = slices.Clone(refs)
		slices.SortFunc(sorted, func(a, b SourceRef) int {
			return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.PatientID, b.PatientID))
		})
	}
	// FNV-1a, 128 bits: the id only has to tell apart the people of an
	// answer, the same on every instance (a cryptographic hash cost a
	// tenth of an answer's matching).
	h := fnv.New128a()
	for _, r := range sorted {
		h.Write([]byte(r.Source))
		h.Write([]byte{0})
		h.Write([]byte(r.PatientID))
		h.Write([]byte{0})
	}
	var sum [16]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:12])
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func appendNew[T comparable](dst []T, src ...T) []T {
	for _, v := range src {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

func appendAddresses(dst []Address, src ...Address) []Address {
	for _, a := range src {
		if !slices.ContainsFunc(dst, func(b Address) bool { return sameAddress(a, b) }) {
			if a.Line == nil {
				a.Line = []string{}
			}
			dst = append(dst, a)
		}
	}
	return dst
}
