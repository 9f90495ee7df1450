package ehr

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
)

// Merge groups the records of the same person, from one EHR or several,
// and returns one Person each, sorted by family name, given name, birth
// date and id. Two records are the same person when they share a medical
// record number (an identifier of type MR with the same system and value),
// or the same normalised family name, first given name and birth date.
// A person's fields are those of its first record (in the order given),
// with identifiers, telecom and addresses of all its records.
func Merge(records []Patient) []Person {
	parent := make([]int, len(records))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	union := func(a, b int) {
		ra, rb := find(a), find(b)
		if ra == rb {
			return
		}
		if rb < ra {
			ra, rb = rb, ra
		}
		parent[rb] = ra // the earliest record stays the root
	}

	first := map[string]int{}
	for i, p := range records {
		for _, k := range matchKeys(p) {
			if j, ok := first[k]; ok {
				union(j, i)
			} else {
				first[k] = i
			}
		}
	}

	groups := map[int][]int{}
	var roots []int
	for i := range records {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], i)
	}
	people := make([]Person, 0, len(roots))
	for _, r := range roots {
		people = append(people, person(records, groups[r]))
	}
	slices.SortFunc(people, comparePeople)
	return people
}

// matchKeys are the keys under which a record meets its other records.
func matchKeys(p Patient) []string {
	var keys []string
	for _, id := range p.Identifiers {
		if strings.EqualFold(id.Type, "MR") && id.Value != "" {
			keys = append(keys, "mrn\x00"+strings.ToLower(id.System)+"\x00"+id.Value)
		}
	}
	family := normalise(p.Name.Family)
	given := ""
	if len(p.Name.Given) > 0 {
		given = normalise(p.Name.Given[0])
	}
	if family != "" && given != "" && p.BirthDate != "" {
		keys = append(keys, "name\x00"+family+"\x00"+given+"\x00"+p.BirthDate)
	}
	return keys
}

// accents folds the accented Latin letters names most often carry.
var accents = func() map[rune]rune {
	m := map[rune]rune{}
	for base, letters := range map[rune]string{
		'a': "àáâãäåāăą", 'c': "çćĉċč", 'd': "ďđ", 'e': "èéêëēĕėęě", 'g': "ĝğġģ", 'h': "ĥħ",
		'i': "ìíîïĩīĭįı", 'j': "ĵ", 'k': "ķ", 'l': "ĺļľŀł", 'n': "ñńņňŉ", 'o': "òóôõöøōŏő",
		'r': "ŕŗř", 's': "śŝşšș", 't': "ţťŧț", 'u': "ùúûüũūŭůűų", 'w': "ŵ", 'y': "ýÿŷ", 'z': "źżž",
	} {
		for _, r := range letters {
			m[r] = base
		}
	}
	return m
}()

// normalise keeps the letters and digits of a name, in lower case and with
// accents folded ("LÓPEZ" and "Lopez" meet).
func normalise(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return -1
		}
		r = unicode.ToLower(r)
		if base, ok := accents[r]; ok {
			return base
		}
		return r
	}, s)
}

func person(records []Patient, idx []int) Person {
	head := records[idx[0]]
	p := Person{Name: head.Name, BirthDate: head.BirthDate, Gender: head.Gender}
	if p.Name.Given == nil {
		p.Name.Given = []string{}
	}
	h := sha256.New()
	for _, i := range idx {
		r := records[i]
		p.Sources = append(p.Sources, SourceRef{Source: r.Source, PatientID: r.ID})
		h.Write([]byte(r.Source + "\x00" + r.ID + "\x00"))
		p.Identifiers = appendNew(p.Identifiers, r.Identifiers...)
		p.Telecom = appendNew(p.Telecom, r.Telecom...)
		p.Address = appendAddresses(p.Address, r.Address...)
		if r.LastUpdated.After(p.LastUpdated) {
			p.LastUpdated = r.LastUpdated
		}
		if p.BirthDate == "" {
			p.BirthDate = r.BirthDate
		}
		if p.Gender == "" {
			p.Gender = r.Gender
		}
	}
	p.ID = hex.EncodeToString(h.Sum(nil)[:12])
	if p.Identifiers == nil {
		p.Identifiers = []Identifier{}
	}
	if p.Telecom == nil {
		p.Telecom = []ContactPoint{}
	}
	if p.Address == nil {
		p.Address = []Address{}
	}
	return p
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
		if !slices.ContainsFunc(dst, func(b Address) bool {
			return slices.Equal(a.Line, b.Line) && a.City == b.City && a.State == b.State && a.PostalCode == b.PostalCode && a.Country == b.Country
		}) {
			if a.Line == nil {
				a.Line = []string{}
			}
			dst = append(dst, a)
		}
	}
	return dst
}
