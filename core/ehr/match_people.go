package ehr

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
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
	// The people's sources are cut from one slice, in their order.
	sources, from := make([]SourceRef, len(m.records)), make([]int, len(roots)+1)
	for k, r := range roots {
		at[r.root] = k
		from[k+1] = from[k] + len(m.of(r.root))
	}
	// People are independent: on an idle core this takes half the time.
	inHalves(len(roots), func(lo, hi int) {
		for k := lo; k < hi; k++ {
			r := roots[k]
			people[k] = person(m.records, m.of(r.root), r.id, sources[from[k]:from[k]:from[k+1]])
			people[k].Match = m.match(r.root, len(m.of(r.root)))
		}
	})
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
		score, reasons := c.score(), c.reasons() // one list for both: neither is changed
		pa.PossibleMatches = append(pa.PossibleMatches, PossibleMatch{PersonID: pb.ID, Score: score, Reasons: reasons})
		pb.PossibleMatches = append(pb.PossibleMatches, PossibleMatch{PersonID: pa.ID, Score: score, Reasons: reasons})
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
	// The ids are written to one buffer, made one string.
	ids := m.ids[:0]
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
		refs := m.refs[:0]
		for _, j := range m.of(k.root) {
			k.birth = cmp.Or(k.birth, m.records[j].BirthDate)
			refs = append(refs, SourceRef{Source: m.records[j].Source, PatientID: m.records[j].ID})
		}
		ids, m.refs = appendPersonID(ids, refs), refs
	}
	all := string(ids)
	for x := range ks {
		ks[x].id = all[x*personIDLen : (x+1)*personIDLen]
	}
	m.ids = ids
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

// person merges the records idx (in the order given) into the Person id
// (its sources appended to sources):
// the first record's name, birth date and gender (blanks filled from the
// others), every record's identifiers, telecom and addresses once.
func person(records []Patient, idx []int, id string, sources []SourceRef) Person {
	head := records[idx[0]]
	p := Person{Name: head.Name, BirthDate: head.BirthDate, Gender: head.Gender, LastUpdated: head.LastUpdated,
		PossibleMatches: []PossibleMatch{}, Sources: sources}
	if p.Name.Given == nil {
		p.Name.Given = []string{}
	}
	// The head's lists as they are when they hold nothing twice (most
	// people are one record), else merged into lists made once.
	p.Identifiers, p.Telecom, p.Address = distinct(head.Identifiers), distinct(head.Telecom), distinctAddresses(head.Address)
	if len(idx) > 1 {
		var ids, telecom, addresses int
		for _, i := range idx {
			ids, telecom, addresses = ids+len(records[i].Identifiers), telecom+len(records[i].Telecom), addresses+len(records[i].Address)
		}
		p.Identifiers = appendNew(make([]Identifier, 0, ids), p.Identifiers...)
		p.Telecom = appendNew(make([]ContactPoint, 0, telecom), p.Telecom...)
		p.Address = appendAddresses(make([]Address, 0, addresses), p.Address...)
	}
	for k, i := range idx {
		r := records[i]
		p.Sources = append(p.Sources, SourceRef{Source: r.Source, PatientID: r.ID})
		if k == 0 {
			continue
		}
		p.Identifiers = appendNew(p.Identifiers, r.Identifiers...)
		p.Telecom = appendNew(p.Telecom, r.Telecom...)
		p.Address = appendAddresses(p.Address, r.Address...)
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

// personIDLen is the length of a person's id: 12 bytes in hex.
const personIDLen = 24

// appendPersonID appends the id of the person of the records refs
// (sorted in place) to dst: a hash of them, sorted.
func appendPersonID(dst []byte, refs []SourceRef) []byte {
	slices.SortFunc(refs, func(a, b SourceRef) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.PatientID, b.PatientID))
	})
	// FNV-1a, 128 bits: the id only has to tell apart the people of an
	// answer, the same on every instance (a cryptographic hash cost a
	// tenth of an answer's matching).
	h := fnv1a128{fnvOffset128Hi, fnvOffset128Lo}
	for _, r := range refs {
		h.write(r.Source)
		h.write("\x00")
		h.write(r.PatientID)
		h.write("\x00")
	}
	var sum [16]byte
	binary.BigEndian.PutUint64(sum[:8], h.hi)
	binary.BigEndian.PutUint64(sum[8:], h.lo)
	return hex.AppendEncode(dst, sum[:personIDLen/2])
}

// fnv1a128 is FNV-1a of 128 bits (hash/fnv's New128a) over strings,
// without converting them to bytes.
type fnv1a128 struct{ hi, lo uint64 }

const (
	fnvOffset128Hi = 0x6c62272e07bb0142
	fnvOffset128Lo = 0x62b821756295c58d
	fnvPrime128Hi  = 1 << (88 - 64) // the prime is 2^88 + 2^8 + 0x3b
	fnvPrime128Lo  = 0x13b
)

func (h *fnv1a128) write(s string) {
	for i := 0; i < len(s); i++ {
		h.lo ^= uint64(s[i])
		// (hi, lo) × prime, mod 2^128.
		carry, lo := bits.Mul64(h.lo, fnvPrime128Lo)
		h.hi = h.hi*fnvPrime128Lo + h.lo*fnvPrime128Hi + carry
		h.lo = lo
	}
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
