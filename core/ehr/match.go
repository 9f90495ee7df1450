package ehr

import (
	"cmp"
	"slices"
	"sync"
)

// MatchPeople groups the records of one answer, from one EHR or several,
// into people, and returns them sorted by family name, given name, birth
// date and id (the contract's "Who is the same person").
//
// Records are one person only when a member said so (a link of decision
// same) or when the certain rule holds and nothing keeps them apart. The
// links are applied first, newest first, so that when two disagree the
// newer wins: a same link joins two people unless a newer different link
// keeps them apart; a different link keeps two people apart unless newer
// same links already joined them. Then the certain pairs, strongest first,
// join two people unless a link keeps them apart or some record of one
// and some record of the other are vetoed (a record that lacks a birth
// date must not join two people whose birth dates differ).
//
// A person of several records carries Match: confirmed when a link joined
// some of them (score 1, reasons "link" then those of the certain pairs),
// else certain (the score of its weakest pair, the reasons of its pairs).
// Two people not merged of which some records are a probable pair, or a
// certain pair kept apart by a veto, list each other in PossibleMatches
// (with the score and reasons of their strongest pair) unless a different
// link is between them.
//
// A person's id is a hash of its records' sources and patient ids, so it
// is the same for the same records, in whatever order they come.
func MatchPeople(records []Patient, links *LinkSet) []Person {
	m := matchers.Get().(*matcher)
	defer m.release()
	m.reset(records)
	m.applyLinks(links)
	pairs := m.candidates()
	certain := slices.DeleteFunc(append(m.certain[:0], pairs...), func(p pair) bool { return !p.c.certain })
	slices.SortStableFunc(certain, func(a, b pair) int { return cmp.Compare(b.c.weight, a.c.weight) })
	for _, p := range certain {
		m.joinCertain(p)
	}
	m.certain = certain
	return m.people(pairs)
}

// matcher is the state of one MatchPeople.
type matcher struct {
	records []Patient
	traits  []traits
	parent  []int
	// apart are the record pairs of different links in force; joined
	// clusters carry theirs (checked by root when two clusters meet).
	apart [][2]int
	// confirmed marks the roots of clusters a link joined; edges are the
	// certain pairs each cluster was joined by.
	confirmed map[int]bool
	edges     map[int][]comparison
	// members are the records of each root's cluster of several, in the
	// order given (nil for a cluster of one: see of); self[i] is i.
	members [][]int
	self    []int
	// Scratch of candidates and sortedRoots, and the normalisers of the
	// two halves, kept for the next answer (matchers).
	index              map[uint64]int32
	last, record, prev []int32
	seen               []uint64
	out, certain       []pair
	norms              [2]*normaliser
	// Scratch of sortedRoots.
	keys                           []sortKey
	familyRanks, givenRanks, order []int32
	ids                            []byte
	refs                           []SourceRef
	rankIndex                      map[string]int32
	distinct                       []string
}

// matchers keeps matchers between answers: an answer's scratch (its
// records' normalised forms, blocks and bit sets, some hundreds of KB) is
// reused rather than left to the collector.
var matchers = sync.Pool{New: func() any {
	return &matcher{confirmed: map[int]bool{}, edges: map[int][]comparison{}, index: map[uint64]int32{}, rankIndex: map[string]int32{},
		norms: [2]*normaliser{newNormaliser(0), newNormaliser(0)}}
}}

// sized is s with length n and zero values, reusing its array when it can.
func sized[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// release drops what m refers to of the answer and gives it back to
// matchers.
func (m *matcher) release() {
	clear(m.traits)
	clear(m.members)
	clear(m.out)
	clear(m.certain)
	clear(m.keys)
	clear(m.distinct)
	clear(m.rankIndex)
	m.records, m.apart = nil, m.apart[:0]
	clear(m.confirmed)
	clear(m.edges)
	for _, n := range m.norms {
		n.reset()
	}
	matchers.Put(m)
}

// of is the records of root's cluster.
func (m *matcher) of(root int) []int {
	if m.members[root] == nil {
		return m.self[root : root+1]
	}
	return m.members[root]
}

type pair struct {
	i, j int
	c    comparison
}

// reset readies m for records.
func (m *matcher) reset(records []Patient) {
	n := len(records)
	m.records = records
	m.traits, m.parent, m.self, m.members = sized(m.traits, n), sized(m.parent, n), sized(m.self, n), sized(m.members, n)
	for i := range records {
		m.parent[i] = i
		m.self[i] = i
	}
	// Records are independent: on an idle core the largest step takes
	// half the time.
	inHalves(n, func(from, to int) { m.normalise(m.norms[min(from, 1)], from, to) })
}

// inHalves runs f over [0, n) in two halves at once, or over all of it
// when n is below parallelTraits. The halves must not share what they
// write.
func inHalves(n int, f func(from, to int)) {
	if n < parallelTraits {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { f(n/2, n) })
	f(0, n/2)
	wg.Wait()
}

// parallelTraits is the least number of records normalised in two halves.
const parallelTraits = 64

// normalise computes the traits of records [from, to) with norm.
func (m *matcher) normalise(norm *normaliser, from, to int) {
	for i := from; i < to; i++ {
		m.traits[i] = norm.traitsOf(m.records[i])
	}
}

func (m *matcher) find(i int) int {
	for m.parent[i] != i {
		m.parent[i] = m.parent[m.parent[i]]
		i = m.parent[i]
	}
	return i
}

// union joins the clusters of roots a and b; the root with the lower
// index stays (the first record in the order given leads the person).
func (m *matcher) union(a, b int) int {
	if b < a {
		a, b = b, a
	}
	m.parent[b] = a
	m.members[a] = append(slices.Clone(m.of(a)), m.of(b)...)
	slices.Sort(m.members[a])
	m.members[b] = nil
	if m.confirmed[b] {
		m.confirmed[a] = true
	}
	m.edges[a] = append(m.edges[a], m.edges[b]...)
	delete(m.confirmed, b)
	delete(m.edges, b)
	return a
}

// keptApart reports whether a different link is between the clusters of
// roots a and b.
func (m *matcher) keptApart(a, b int) bool {
	for _, p := range m.apart {
		x, y := m.find(p[0]), m.find(p[1])
		if (x == a && y == b) || (x == b && y == a) {
			return true
		}
	}
	return false
}

// applyLinks applies the links whose two records are both in the answer,
// newest first.
func (m *matcher) applyLinks(links *LinkSet) {
	if links.Len() == 0 {
		return
	}
	index := make(map[SourceRef]int, len(m.records))
	for i, r := range m.records {
		if _, dup := index[SourceRef{r.Source, r.ID}]; !dup {
			index[SourceRef{Source: r.Source, PatientID: r.ID}] = i
		}
	}
	for _, l := range links.links {
		i, okI := index[l.Records[0]]
		j, okJ := index[l.Records[1]]
		if !okI || !okJ {
			continue
		}
		a, b := m.find(i), m.find(j)
		switch {
		case a == b:
			// Joined already by newer same links: this one is older.
		case l.Decision == Same && !m.keptApart(a, b):
			m.confirmed[m.union(a, b)] = true
		case l.Decision == Different:
			m.apart = append(m.apart, [2]int{i, j})
		}
	}
}

// joinCertain joins the clusters of a certain pair unless a link keeps
// them apart or a veto holds between some record of each.
func (m *matcher) joinCertain(p pair) {
	a, b := m.find(p.i), m.find(p.j)
	if a == b || m.keptApart(a, b) {
		return
	}
	for _, x := range m.of(a) {
		for _, y := range m.of(b) {
			if (x != p.i || y != p.j) && (x != p.j || y != p.i) && compare(&m.traits[x], &m.traits[y]).vetoed {
				return
			}
		}
	}
	root := m.union(a, b)
	m.edges[root] = append(m.edges[root], p.c)
}
