package ehr

import (
	"bytes"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// What matching compares of a record, normalised once per record: names
// without case, accents, punctuation, spacing or generational suffix;
// phones as the national number's digits; e-mails in lower case;
// addresses as their first line and postal code with the usual street
// words abbreviated.

// traits are the normalised facts of one record.
type traits struct {
	family     string   // letters of the family name, suffix dropped
	given      string   // letters of the first given name
	givenFirst string   // letters of its first word ("mary" of "Mary Ann")
	nicknames  []string // the given names givenFirst may stand for ("william" for "bill"), itself included; nil when it is in no nickname list
	suffix     string   // jr, sr, ii, iii, iv; "" when none
	birth      string   // YYYY-MM-DD; "" when unknown or partial
	gender     string
	phones     []string // national digits (E.164 outside North America)
	emails     []string
	addresses  []string // "<first line>|<postal code>"
	ids        []string // "<system>|<value>", system in lower case
	idSystems  []string // the systems of ids, once each
}

// normaliser normalises the records of one answer. A record's normalised
// values are written to one buffer that becomes one string, which its
// traits are cut from (one allocation per record); its lists of values
// are cut from one slice (arena); a name or line that is not ASCII is
// folded once however many records write it (a name search's answer
// repeats them).
type normaliser struct {
	arena   []string
	buf     []byte
	spans   []span // the values of a record's lists, in buf
	folded  map[string]string
	accents transform.Transformer // used by one goroutine at a time
}

// span is where a value is in normaliser.buf.
type span struct{ from, to int }

func newNormaliser(records int) *normaliser {
	return &normaliser{arena: make([]string, 0, 5*records), folded: make(map[string]string, records)}
}

// reset drops what n remembers of an answer, keeping its memory.
func (n *normaliser) reset() {
	clear(n.arena)
	n.arena = n.arena[:0]
	clear(n.folded)
}

// fold is foldName(s), remembered when s is not ASCII.
func (n *normaliser) fold(s string) string {
	if isASCII(s) {
		return foldWith(nil, s)
	}
	f, ok := n.folded[s]
	if !ok {
		if n.accents == nil {
			n.accents = foldAccents()
		}
		f = foldWith(n.accents, s)
		n.folded[s] = f
	}
	return f
}

// appendFolded appends foldName(s) to dst.
func (n *normaliser) appendFolded(dst []byte, s string) []byte {
	if !isASCII(s) {
		return append(dst, n.fold(s)...)
	}
	for i := 0; i < len(s); i++ {
		dst = append(dst, foldASCII(s[i]))
	}
	return dst
}

// foldASCII is an ASCII character as foldName writes it.
func foldASCII(c byte) byte {
	switch {
	case c >= 'A' && c <= 'Z':
		return c + 'a' - 'A'
	case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		return c
	}
	return ' '
}

// traitsOf normalises p.
func (n *normaliser) traitsOf(p Patient) traits {
	n.buf, n.spans = n.buf[:0], n.spans[:0]
	var t traits
	fam, giv, givFirst := n.nameOf(p, &t)
	if len(p.BirthDate) == len("2006-01-02") {
		t.birth = p.BirthDate
	}
	t.gender = p.Gender
	lists := n.appendContacts(p)

	// One string for the record, cut into its values.
	s := string(n.buf)
	cut := func(sp span) string { return s[sp.from:sp.to] }
	list := func(from, to int) []string {
		start := len(n.arena)
		for _, sp := range n.spans[from:to] {
			n.arena = append(n.arena, cut(sp))
		}
		return n.arena[start:len(n.arena):len(n.arena)]
	}
	t.family, t.given = cut(fam), cut(giv)
	if t.given != "" {
		t.givenFirst = cut(givFirst)
		t.nicknames = nicknames[t.givenFirst]
	}
	t.phones, t.emails, t.addresses = list(0, lists[0]), list(lists[0], lists[1]), list(lists[1], lists[2])
	t.ids, t.idSystems = list(lists[2], lists[3]), list(lists[3], lists[4])
	return t
}

// nameOf appends p's family and given names to n.buf, returning their
// spans (and that of the given name's first word), and sets t's
// generational suffix: one written apart (name.suffix) over the
// family's, else one among the later given names.
func (n *normaliser) nameOf(p Patient, t *traits) (fam, giv, givFirst span) {
	family, given := p.Name.Family, ""
	if len(p.Name.Given) > 0 {
		given = p.Name.Given[0]
	}
	if family == "" && given == "" && p.Name.Text != "" {
		// Only a text: its first word is the given name, its last the family.
		if words := nameWords(p.Name.Text); len(words) > 0 {
			given, family = words[0], words[len(words)-1]
		}
	}
	fam, _, t.suffix = n.name(family)
	giv, givFirst, _ = n.name(given)
	for _, s := range p.Name.Suffix {
		if sfx := n.suffixOf(s); sfx != "" {
			t.suffix = sfx
		}
	}
	if t.suffix == "" {
		for _, g := range p.Name.Given[min(1, len(p.Name.Given)):] {
			if sfx := n.suffixOf(g); sfx != "" {
				t.suffix = sfx
			}
		}
	}
	return fam, giv, givFirst
}

// appendContacts appends p's phones, e-mails, address keys, identifiers
// ("system|value") and identifier systems to n.buf, each list's spans
// after the last's; lists are where they end.
func (n *normaliser) appendContacts(p Patient) (lists [5]int) {
	for _, c := range p.Telecom {
		if isSystem(c.System, "phone") || isSystem(c.System, "sms") {
			n.keep(len(n.buf), appendNationalPhone(n.buf, c.Value), 0)
		}
	}
	lists[0] = len(n.spans)
	for _, c := range p.Telecom {
		if isSystem(c.System, "email") {
			from := len(n.buf)
			if e := appendLower(n.buf, strings.TrimSpace(c.Value)); bytes.IndexByte(e[from:], '@') >= 0 {
				n.keep(from, e, lists[0])
			}
		}
	}
	lists[1] = len(n.spans)
	for _, a := range p.Address {
		n.keep(len(n.buf), n.appendAddressKey(n.buf, a), lists[1])
	}
	lists[2] = len(n.spans)
	for _, id := range p.Identifiers {
		if val := strings.TrimSpace(id.Value); val != "" && strings.TrimSpace(id.System) != "" {
			from := len(n.buf)
			sys := appendLower(n.buf, strings.TrimSpace(id.System))
			n.keep(from, append(append(sys, '|'), val...), lists[2])
		}
	}
	lists[3] = len(n.spans)
	for _, sp := range n.spans[lists[2]:lists[3]] { // "system|value": a FHIR system has no "|"
		n.spans = append(n.spans, span{sp.from, sp.from + bytes.IndexByte(n.buf[sp.from:sp.to], '|')})
		if slices.ContainsFunc(n.spans[lists[3]:len(n.spans)-1], func(s span) bool { return n.equal(s, n.spans[len(n.spans)-1]) }) {
			n.spans = n.spans[:len(n.spans)-1]
		}
	}
	lists[4] = len(n.spans)
	return lists
}

// keep makes the bytes appended to n.buf since from (buf: n.buf grown)
// the next value of the list whose spans start at first, unless they are
// none or the list has them already.
func (n *normaliser) keep(from int, buf []byte, first int) {
	n.buf = buf
	v := span{from, len(buf)}
	if v.to == v.from || slices.ContainsFunc(n.spans[first:], func(s span) bool { return n.equal(s, v) }) {
		n.buf = buf[:from]
		return
	}
	n.spans = append(n.spans, v)
}

func (n *normaliser) equal(a, b span) bool {
	return bytes.Equal(n.buf[a.from:a.to], n.buf[b.from:b.to])
}

// name appends the folded words of a name to n.buf, and returns where
// they are without separators (its trailing generational suffixes
// dropped and the last returned) and where its first word is.
func (n *normaliser) name(s string) (joined, first span, suffix string) {
	from := len(n.buf)
	n.buf = n.appendFolded(n.buf, s)
	var array [8]span
	words := array[:0]
	for i := from; i < len(n.buf); {
		if n.buf[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(n.buf) && n.buf[j] != ' ' {
			j++
		}
		words = append(words, span{i, j})
		i = j
	}
	for len(words) > 1 {
		last := words[len(words)-1]
		sfx := suffixOf(string(n.buf[last.from:last.to]))
		if sfx == "" {
			break
		}
		suffix, words = sfx, words[:len(words)-1]
	}
	switch len(words) {
	case 0:
		return span{from, from}, span{from, from}, suffix
	case 1:
		return words[0], words[0], suffix
	}
	start := len(n.buf)
	for _, w := range words {
		n.buf = append(n.buf, n.buf[w.from:w.to]...)
	}
	return span{start, len(n.buf)}, words[0], suffix
}

// suffixOf is the generational suffix s writes once folded, or "".
func (n *normaliser) suffixOf(s string) string {
	from := len(n.buf)
	n.buf = n.appendFolded(n.buf, s)
	sfx := suffixOf(string(n.buf[from:]))
	n.buf = n.buf[:from]
	return sfx
}

func isSystem(s, want string) bool { return s == want || strings.EqualFold(strings.TrimSpace(s), want) }

// appendLower appends s in lower case to dst.
func appendLower(dst []byte, s string) []byte {
	if !isASCII(s) {
		return append(dst, strings.ToLower(s)...)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// foldAccents takes the marks off letters (é → e) the way Unicode
// decomposes them. A chain keeps state while it transforms: each call
// has its own.
func foldAccents() transform.Transformer {
	return transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)
}

// unmarked are the Latin letters that do not decompose into a base letter
// and a mark.
var unmarked = strings.NewReplacer("ø", "o", "ł", "l", "đ", "d", "ı", "i", "ß", "ss", "æ", "ae", "œ", "oe", "þ", "th",
	"Ø", "o", "Ł", "l", "Đ", "d", "Æ", "ae", "Œ", "oe", "Þ", "th")

// foldName is s in lower case, without accents, with every character that
// is not a letter or a digit turned into a space.
func foldName(s string) string { return foldWith(nil, s) }

// foldWith is foldName with accents, the transform that folds accents
// (nil: a new one).
func foldWith(accents transform.Transformer, s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			if accents == nil {
				accents = foldAccents()
			}
			if folded, _, err := transform.String(accents, s); err == nil {
				s = folded
			}
			return strings.Map(func(r rune) rune {
				if unicode.IsLetter(r) || unicode.IsDigit(r) {
					return unicode.ToLower(r)
				}
				return ' '
			}, unmarked.Replace(s))
		}
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'A' && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		default:
			b[i] = ' '
		}
	}
	return string(b)
}

// nameWords are the words of a name, folded.
func nameWords(s string) []string { return strings.Fields(foldName(s)) }

// suffixOf is the generational suffix a folded word writes, or "".
func suffixOf(w string) string {
	switch strings.ReplaceAll(w, " ", "") {
	case "jr", "junior":
		return "jr"
	case "sr", "senior":
		return "sr"
	case "ii", "2nd":
		return "ii"
	case "iii", "3rd":
		return "iii"
	case "iv", "4th":
		return "iv"
	}
	return ""
}

// nicknames maps a common English given name or nickname (folded) to the
// given names it may stand for, itself included, sorted. A nickname is an
// approximate agreement of given names in the score, never enough for a
// certain match.
var nicknames = func() map[string][]string {
	m := map[string][]string{}
	for name, short := range map[string]string{
		"william": "bill billy will willy liam", "robert": "bob bobby rob robbie bert", "richard": "rick ricky dick rich",
		"elizabeth": "liz lizzie beth betty eliza betsy libby", "margaret": "peggy maggie meg marge madge",
		"katherine": "kate kathy katie kat kay", "catherine": "cathy cate", "kathleen": "kathy",
		"james": "jim jimmy jamie", "john": "jack johnny", "jonathan": "jon", "joseph": "joe joey",
		"michael": "mike mikey mick", "thomas": "tom tommy", "charles": "charlie chuck chas",
		"christopher": "chris kit", "christine": "chris chrissy tina", "christina": "tina",
		"daniel": "dan danny", "david": "dave davy", "edward": "ed eddie ted ned", "anthony": "tony",
		"andrew": "andy drew", "matthew": "matt", "nicholas": "nick nicky", "patrick": "pat paddy",
		"patricia": "patty pat trish tricia", "steven": "steve", "stephen": "steve", "timothy": "tim timmy",
		"benjamin": "ben benny", "samuel": "sam sammy", "alexander": "alex al sandy", "alexandra": "alex sandra",
		"gregory": "greg", "jeffrey": "jeff", "kenneth": "ken kenny", "lawrence": "larry", "leonard": "leo len lenny",
		"ronald": "ron ronnie", "donald": "don donnie", "douglas": "doug", "raymond": "ray", "frederick": "fred freddie",
		"henry": "hank harry", "harold": "hal harry", "albert": "al bert", "alfred": "alf fred", "eugene": "gene",
		"gerald": "jerry gerry", "peter": "pete", "philip": "phil", "phillip": "phil", "vincent": "vince vinny",
		"zachary": "zach zack", "jennifer": "jen jenny", "jessica": "jess jessie", "rebecca": "becky becca",
		"susan": "sue susie", "suzanne": "sue", "deborah": "deb debbie", "dorothy": "dot dottie dolly",
		"barbara": "barb babs", "virginia": "ginny ginger", "victoria": "vicky tori", "abigail": "abby gail",
		"samantha": "sam sammie", "pamela": "pam", "cynthia": "cindy", "theresa": "terry tess", "teresa": "terry tess",
		"jacqueline": "jackie", "judith": "judy", "kimberly": "kim", "melissa": "missy mel", "nancy": "nan",
		"sandra": "sandy", "amanda": "mandy", "angela": "angie", "frances": "fran frankie", "francis": "frank",
		"josephine": "jo josie", "rosemary": "rose", "valerie": "val", "veronica": "ronnie", "allison": "ally",
		"eleanor": "ellie nell", "helen": "nell", "carolyn": "carol", "caroline": "carrie", "madeline": "maddie",
	} {
		for _, s := range append(strings.Fields(short), name) {
			if !slices.Contains(m[s], s) {
				m[s] = append(m[s], s)
			}
			if !slices.Contains(m[s], name) {
				m[s] = append(m[s], name)
			}
		}
	}
	for _, names := range m {
		slices.Sort(names)
	}
	return m
}()
