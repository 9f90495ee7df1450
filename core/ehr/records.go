package ehr

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The clinical records of a search (the contract's "Clinical records"):
// what the systems answered merged into one list, the date range rule, and
// the scope a record type needs.

// RecordSource is one system's copy of a merged record.
type RecordSource struct {
	Source    string
	RecordID  string // the system's id of the record
	PatientID string // the system's id of the person
}

// RecordItem is one result of a record search: one record, held by one
// system or several, merged.
type RecordItem struct {
	ID       string // stable for the same record and request
	Type     ClinicalType
	Sources  []RecordSource // in the order of the systems; the first is the item's source
	PersonID string         // the person's id in a patient search; "" when unknown
	// Date is the clinical date as the first source wrote it; "" when the
	// record has none.
	Date        string
	Status      string
	Code        Coding
	Text        string
	Value       *RecordValue
	Attachment  *Attachment
	LastUpdated time.Time // the latest of the sources'; zero when none tells
}

// SourceRecords is what one system answered to a record search.
type SourceRecords struct {
	Source  string
	Records []Record
}

// MergeRecords merges the records that systems answered into one list of
// items. sets are in the order of the systems (the EHR systems file's
// order, which is also the order of an item's sources). personID tells
// the id, in a patient search, of the person a system's patient is; ""
// when it does not know.
//
// The same record held by two systems is one item with both sources: same
// type, same person (personID not ""), same code (Code.System and
// Code.Code, both not empty) and the same calendar day of its date as
// written, in its own offset ("2024-03-01T23:30:00-05:00" is on 2024-03-01).
// A partial date merges only with the same partial date ("2024-03" with
// "2024-03", never with "2024-03-01"). Records without a person, a code or
// a (well-formed) date are never merged. The records of one system are
// never merged with each other — they are that many records: when system
// A holds two records under one key and system B one, B's joins A's
// earliest (by instant, then id) and A's other stays on its own. A record
// a system answered twice (same type and id, as overlapping pages may) is
// taken once.
//
// An item's fields are those of its first source, blanks filled from the
// others; LastUpdated is the latest. Its id is a hash of its type and of
// its sources' (source, recordId) pairs sorted, so it does not depend on
// the order of the systems or of the records; like a person's id it
// changes when a system that held the record does not answer.
//
// Items are sorted by date, newest first (see compareRecordDates for dates
// of different precision and offsets), undated last, then by the record
// type's client name, then by id.
func MergeRecords(sets []SourceRecords, personID func(source, patientID string) string) []RecordItem {
	g := groupRecords(sets, personID)
	groups := g.pairs()
	items := make([]RecordItem, 0, len(groups))
	for _, group := range groups {
		recs := make([]Record, len(group))
		srcs := make([]string, len(group))
		for i, e := range group {
			recs[i], srcs[i] = e.rec, sets[e.set].Source
		}
		items = append(items, recordItem(recs, srcs, personID))
	}
	sortRecordItems(items)
	return items
}

// recordEntry is one record of one set, with its date parsed.
type recordEntry struct {
	set  int
	rec  Record
	date recordDate
	ok   bool // date well formed
}

// recordGroups are the records sorted for merging: those that may merge
// by merge key (per set, its entries) in the order the keys were met, and
// those that never merge.
type recordGroups struct {
	byKey  map[string][][]recordEntry
	keys   []string
	single [][]recordEntry
}

// groupRecords sorts the records of sets into merge groups, taking a
// record a system returned twice once.
func groupRecords(sets []SourceRecords, personID func(source, patientID string) string) recordGroups {
	g := recordGroups{byKey: map[string][][]recordEntry{}}
	seen := map[string]bool{}
	for si, set := range sets {
		for _, r := range set.Records {
			dup := set.Source + "\x00" + string(r.Type) + "\x00" + r.ID
			if seen[dup] {
				continue
			}
			seen[dup] = true
			e := recordEntry{set: si, rec: r}
			e.date, e.ok = parseRecordDate(r.Date)
			person := personID(set.Source, r.PatientID)
			if !e.ok || person == "" || r.Code.System == "" || r.Code.Code == "" {
				g.single = append(g.single, []recordEntry{e})
				continue
			}
			k := string(r.Type) + "\x00" + person + "\x00" + r.Code.System + "\x00" + r.Code.Code + "\x00" + e.date.written
			bySet, ok := g.byKey[k]
			if !ok {
				g.keys = append(g.keys, k)
				bySet = make([][]recordEntry, len(sets))
				g.byKey[k] = bySet
			}
			bySet[si] = append(bySet[si], e)
		}
	}
	return g
}

// pairs are the items to be: each record that never merges on its own,
// and per merge key the i-th record of every set together (by time, then
// id), so two records of one system never merge with each other.
func (g recordGroups) pairs() [][]recordEntry {
	out := g.single
	for _, k := range g.keys {
		perSet := g.byKey[k]
		n := 0
		for _, es := range perSet {
			slices.SortFunc(es, func(a, b recordEntry) int {
				return cmp.Or(a.date.at.Compare(b.date.at), cmp.Compare(a.rec.Date, b.rec.Date), cmp.Compare(a.rec.ID, b.rec.ID))
			})
			n = max(n, len(es))
		}
		for i := range n {
			var group []recordEntry
			for _, es := range perSet {
				if i < len(es) {
					group = append(group, es[i])
				}
			}
			out = append(out, group)
		}
	}
	return out
}

// sortRecordItems sorts items as compareRecordItems does, reading each
// date and each type's client name once and moving small keys, not
// items, while it sorts (a record search sorts some thousand items on the
// way to its answer).
func sortRecordItems(items []RecordItem) {
	type keyed struct {
		at      time.Time
		ok      bool
		typ, id string
		i       int
	}
	ks := make([]keyed, len(items))
	for i, it := range items {
		d, ok := parseRecordDate(it.Date)
		ks[i] = keyed{at: d.at, ok: ok, typ: it.Type.Snake(), id: it.ID, i: i}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if a.ok != b.ok {
			if a.ok {
				return -1
			}
			return 1
		}
		return cmp.Or(b.at.Compare(a.at), cmp.Compare(a.typ, b.typ), cmp.Compare(a.id, b.id))
	})
	sorted := make([]RecordItem, len(items))
	for j, k := range ks {
		sorted[j] = items[k.i]
	}
	copy(items, sorted)
}

// recordItem merges the records recs (one per source srcs, in the order
// of the systems) into one item.
func recordItem(recs []Record, srcs []string, personID func(source, patientID string) string) RecordItem {
	head := recs[0]
	it := RecordItem{Type: head.Type, PersonID: personID(srcs[0], head.PatientID), Date: head.Date, Status: head.Status,
		Code: head.Code, Text: head.Text, Value: head.Value, Attachment: head.Attachment}
	for i, r := range recs {
		it.Sources = append(it.Sources, RecordSource{Source: srcs[i], RecordID: r.ID, PatientID: r.PatientID})
		if r.LastUpdated.After(it.LastUpdated) {
			it.LastUpdated = r.LastUpdated
		}
		it.Status = cmp.Or(it.Status, r.Status)
		it.Text = cmp.Or(it.Text, r.Text)
		it.Code.Display = cmp.Or(it.Code.Display, r.Code.Display)
		if it.Value == nil {
			it.Value = r.Value
		}
		if it.Attachment == nil {
			it.Attachment = r.Attachment
		}
	}
	sorted := slices.Clone(it.Sources)
	slices.SortFunc(sorted, func(a, b RecordSource) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.RecordID, b.RecordID))
	})
	h := sha256.New()
	h.Write([]byte(string(head.Type) + "\x00"))
	for _, s := range sorted {
		h.Write([]byte(s.Source + "\x00" + s.RecordID + "\x00"))
	}
	it.ID = hex.EncodeToString(h.Sum(nil)[:12])
	return it
}

// compareRecordItems orders items newest first, undated last, then by
// record type (client name), then id.
func compareRecordItems(a, b RecordItem) int {
	return cmp.Or(compareRecordDates(a.Date, b.Date), cmp.Compare(a.Type.Snake(), b.Type.Snake()), cmp.Compare(a.ID, b.ID))
}

// compareRecordDates orders two record dates as written, newest first:
// negative when a sorts before b. A dateTime compares by its instant
// ("2024-03-01T23:30:00-05:00" is 2024-03-02T04:30Z, after
// "2024-03-02T01:00:00Z"); a date without a time by the start of its
// first day in UTC, so a partial date sorts as its first day ("2024-03"
// as 2024-03-01, "2024" as 2024-01-01). An empty or malformed date is
// undated and sorts last; two such are equal.
func compareRecordDates(a, b string) int {
	da, oka := parseRecordDate(a)
	db, okb := parseRecordDate(b)
	switch {
	case !oka && !okb:
		return 0
	case !oka:
		return 1
	case !okb:
		return -1
	}
	return db.at.Compare(da.at)
}

// InDateRange reports whether a record dated date (as written: a FHIR date
// or dateTime) is kept by the date range from–to, inclusive by calendar
// day; a zero from or to leaves that side open. Without a range (both
// zero) every record is kept, undated ones too; with one, an undated
// record is left out, and so is one whose date is malformed (not a FHIR
// date or dateTime: it is taken as undated).
//
// The calendar day is the one written, in the date's own offset:
// "2024-03-01T23:30:00-05:00" is on 2024-03-01, though it is 2024-03-02
// in UTC. A partial date is every day it names ("2024-03" the whole of
// March 2024, "2024" the year) and is kept when any of those days is in
// the range (overlap): a record whose date is not precise enough to tell
// is shown rather than lost.
func InDateRange(date string, from, to Date) bool {
	if !from.valid() && !to.valid() {
		return true
	}
	d, ok := parseRecordDate(date)
	if !ok {
		return false
	}
	if from.valid() && compareDays(d.last, from) < 0 {
		return false
	}
	if to.valid() && compareDays(d.first, to) > 0 {
		return false
	}
	return true
}

func compareDays(a, b Date) int {
	return cmp.Or(cmp.Compare(a.Year, b.Year), cmp.Compare(a.Month, b.Month), cmp.Compare(a.Day, b.Day))
}

// recordDate is a record's date as written, read.
type recordDate struct {
	written     string    // its calendar part as written: "2024", "2024-03" or "2024-03-01"
	first, last Date      // the first and last calendar day it names
	at          time.Time // the instant it sorts by (see compareRecordDates)
}

// parseRecordDate reads a FHIR R4 date or dateTime: YYYY, YYYY-MM,
// YYYY-MM-DD, or YYYY-MM-DDThh:mm:ss[.fraction] with an offset (Z or
// ±hh:mm). A time without an offset, which FHIR does not allow but some
// systems write, is read as UTC for sorting; its calendar day is still the
// one written. ok is false for anything else (an empty string too).
func parseRecordDate(s string) (d recordDate, ok bool) {
	num := func(t string) (int, bool) {
		for i := 0; i < len(t); i++ {
			if t[i] < '0' || t[i] > '9' {
				return 0, false
			}
		}
		n, err := strconv.Atoi(t)
		return n, err == nil
	}
	if len(s) < 4 {
		return d, false
	}
	y, ok := num(s[:4])
	if !ok {
		return d, false
	}
	switch {
	case len(s) == 4:
		d.first, d.last = Date{y, time.January, 1}, Date{y, time.December, 31}
	case len(s) == 7 && s[4] == '-':
		m, ok := num(s[5:7])
		if !ok || m < 1 || m > 12 {
			return d, false
		}
		d.first, d.last = Date{y, time.Month(m), 1}, Date{y, time.Month(m), daysIn(y, time.Month(m))}
	case len(s) >= 10 && s[4] == '-' && s[7] == '-' && (len(s) == 10 || s[10] == 'T'):
		m, okm := num(s[5:7])
		day, okd := num(s[8:10])
		if !okm || !okd || m < 1 || m > 12 || day < 1 || day > daysIn(y, time.Month(m)) {
			return d, false
		}
		d.first = Date{y, time.Month(m), day}
		d.last = d.first
		if len(s) > 10 {
			t, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", s)
			if err != nil {
				t, err = time.Parse("2006-01-02T15:04:05.999999999", s)
			}
			if err != nil {
				return d, false
			}
			d.at = t
		}
	default:
		return d, false
	}
	if d.at.IsZero() {
		d.at = d.first.midnight(time.UTC, 0)
	}
	d.written = s[:min(len(s), 10)]
	return d, true
}

// daysIn is the number of days of month m of year y.
func daysIn(y int, m time.Month) int {
	return time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// checkRecordSearch allows a search of t's records to staff and systems: s
// on the record's FHIR type in context user or system (a wildcard type
// does too). Without it, insufficient_scope naming user/<Type>.rs.
func checkRecordSearch(a core.Actor, t ClinicalType) error {
	if a.Allows(core.ContextUser, string(t), core.PermSearch) || a.Allows(core.ContextSystem, string(t), core.PermSearch) {
		return nil
	}
	return core.InsufficientScope("user/" + string(t) + ".rs")
}
