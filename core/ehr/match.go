package ehr

import (
	"cmp"
	"encoding/hex"
	"hash/fnv"
	"hash/maphash"
	"slices"
	"strings"
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
	certain := slices.DeleteFunc(slices.Clone(pairs), func(p pair) bool { return !p.c.certain })
	slices.SortStableFunc(certain, func(a, b pair) int { return cmp.Compare(b.c.weight, a.c.weight) })
	for _, p := range certain {
		m.joinCertain(p)
	}
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
	out                []pair
	norms              [2]*normaliser
	// Scratch of sortedRoots.
	keys                           []sortKey
	familyRanks, givenRanks, order []int32
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

// candidates are the pairs of records worth comparing — those that share
// a blocking key (a birth date or the same with day and month swapped, a
// family and first given name, a phone, an e-mail, an address or an
// identifier) — compared, in the order of their records.
func (m *matcher) candidates() []pair {
	// The blocks as linked lists: a block's last entry, each entry's
	// record and the entry before it in its block.
	n := len(m.records)
	// Keys are hashed: two keys that collide only make one block of two,
	// whose pairs are compared all the same.
	clear(m.index)
	index := m.index
	seed := maphash.MakeSeed()
	last, record, prev := m.last[:0], m.record[:0], m.prev[:0]
	var keys []blockKey
	for i := range m.traits {
		keys = blockingKeys(&m.traits[i], keys[:0])
		for _, key := range keys {
			k := maphash.Comparable(seed, key)
			b, ok := index[k]
			if !ok {
				b = int32(len(last))
				index[k] = b
				last = append(last, -1)
			}
			record, prev = append(record, int32(i)), append(prev, last[b])
			last[b] = int32(len(record) - 1)
		}
	}
	m.last, m.record, m.prev = last, record, prev
	m.seen = sized(m.seen, (n*n+63)/64) // pair (i, j), i < j, at bit i*n+j
	seen := m.seen
	out := m.out[:0]
	var members []int
	for _, e := range last {
		members = members[:0]
		for ; e >= 0; e = prev[e] {
			members = append(members, int(record[e]))
		}
		for x, i := range members {
			for _, j := range members[x+1:] {
				i, j := min(i, j), max(i, j)
				bit := i*n + j
				if i == j || seen[bit/64]&(1<<(bit%64)) != 0 {
					continue
				}
				seen[bit/64] |= 1 << (bit % 64)
				if c := compare(&m.traits[i], &m.traits[j]); c.certain || c.probable {
					out = append(out, pair{i: i, j: j, c: c})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b pair) int { return cmp.Or(cmp.Compare(a.i, b.i), cmp.Compare(a.j, b.j)) })
	m.out = out
	return out
}

// blockKey is a blocking key: its kind and up to three values.
type blockKey struct {
	kind    byte
	a, b, c string
}

// blockingKeys appends the keys t is blocked under to keys.
func blockingKeys(t *traits, keys []blockKey) []blockKey {
	if t.birth != "" {
		// The same birth date has the same key as its day/month swap.
		lo, hi := t.birth[5:7], t.birth[8:10]
		if hi < lo {
			lo, hi = hi, lo
		}
		keys = append(keys, blockKey{'s', t.birth[:4], lo, hi})
	}
	if t.family != "" && t.given != "" {
		keys = append(keys, blockKey{'n', t.family, t.given, ""})
	}
	for _, v := range t.phones {
		keys = append(keys, blockKey{'p', v, "", ""})
	}
	for _, v := range t.emails {
		keys = append(keys, blockKey{'e', v, "", ""})
	}
	for _, v := range t.addresses {
		keys = append(keys, blockKey{'a', v, "", ""})
	}
	for _, v := range t.ids {
		keys = append(keys, blockKey{'i', v, "", ""})
	}
	return keys
}

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
