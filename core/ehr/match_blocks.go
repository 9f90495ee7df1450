package ehr

import (
	"cmp"
	"hash/maphash"
	"slices"
)

// Blocking: which pairs of an answer's records are compared at all.

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
