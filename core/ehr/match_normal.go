package ehr

import (
	"slices"
	"strings"
	"unicode"

	"github.com/nyaruka/phonenumbers"
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

// normaliser normalises the records of one answer: their lists of values
// are cut from one slice (arena), and each name or line is folded once
// however many records write it (a name search's answer repeats them).
type normaliser struct {
	arena   []string
	folded  map[string]string
	accents transform.Transformer // used by one goroutine at a time
}

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
		return foldWith(nil, s) // folding ASCII costs less than remembering it
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

// traitsOf normalises p.
func (n *normaliser) traitsOf(p Patient) traits {
	arena := &n.arena
	var t traits
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
	var buf [8]string
	fam := appendWords(buf[:0], n.fold(family))
	for len(fam) > 1 && suffixOf(fam[len(fam)-1]) != "" {
		t.suffix = suffixOf(fam[len(fam)-1])
		fam = fam[:len(fam)-1]
	}
	t.family = concat(fam)
	if giv := appendWords(buf[:0], n.fold(given)); len(giv) > 0 {
		t.given, t.givenFirst = concat(giv), giv[0]
		t.nicknames = nicknames[t.givenFirst]
	}
	for _, s := range p.Name.Suffix {
		if sfx := suffixOf(foldName(s)); sfx != "" {
			t.suffix = sfx
		}
	}
	if t.suffix == "" {
		for _, g := range p.Name.Given[min(1, len(p.Name.Given)):] {
			if sfx := suffixOf(foldName(g)); sfx != "" {
				t.suffix = sfx
			}
		}
	}
	if len(p.BirthDate) == len("2006-01-02") {
		t.birth = p.BirthDate
	}
	t.gender = p.Gender
	// The lists of normalised values are cut from one slice, list by list.
	list := func(from int) []string { return (*arena)[from:len(*arena):len(*arena)] }
	from := len(*arena)
	for _, c := range p.Telecom {
		if isSystem(c.System, "phone") || isSystem(c.System, "sms") {
			if n := NationalPhone(c.Value); n != "" {
				appendOnce(arena, from, n)
			}
		}
	}
	t.phones, from = list(from), len(*arena)
	for _, c := range p.Telecom {
		if !isSystem(c.System, "email") {
			continue
		}
		if e := strings.ToLower(strings.TrimSpace(c.Value)); strings.Contains(e, "@") {
			appendOnce(arena, from, e)
		}
	}
	t.emails, from = list(from), len(*arena)
	for _, a := range p.Address {
		if k := addressKey(a, n.fold); k != "" {
			appendOnce(arena, from, k)
		}
	}
	t.addresses, from = list(from), len(*arena)
	for _, id := range p.Identifiers {
		if sys, val := identifierSystem(id), strings.TrimSpace(id.Value); sys != "" && val != "" {
			appendOnce(arena, from, sys+"|"+val)
		}
	}
	t.ids, from = list(from), len(*arena)
	for _, v := range t.ids { // "system|value": a FHIR system has no "|"
		appendOnce(arena, from, v[:strings.IndexByte(v, '|')])
	}
	t.idSystems = list(from)
	return t
}

func isSystem(s, want string) bool { return s == want || strings.EqualFold(strings.TrimSpace(s), want) }

// identifierSystem is an identifier's system as matching compares it.
func identifierSystem(id Identifier) string { return strings.ToLower(strings.TrimSpace(id.System)) }

// appendOnce appends s to *arena unless it is among (*arena)[from:].
func appendOnce(arena *[]string, from int, s string) {
	if !slices.Contains((*arena)[from:], s) {
		*arena = append(*arena, s)
	}
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

// appendWords appends the words of folded to words.
func appendWords(words []string, folded string) []string {
	for w := range strings.FieldsSeq(folded) {
		words = append(words, w)
	}
	return words
}

// concat joins words without a separator.
func concat(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words, "")
}

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

// NationalPhone is the number a phone is, as matching compares phones:
// the ten digits of a North American number, however it is written
// ("+1-217-555-0633", "(217) 555-0633"), else its E.164 form read by
// libphonenumber (phonenumbers) with the United States as the default
// region; "" when it is not a number. An extension is left out.
func NationalPhone(s string) string {
	if i := strings.IndexAny(s, "xXeE#;"); i >= 0 { // x12, ext. 12, #12, ;ext=12
		s = s[:i]
	}
	digits := make([]byte, 0, 16)
	plus := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '+' && len(digits) == 0:
			plus = true
		}
	}
	// The common case, without the library's parse: a North American
	// number, written nationally or with +1.
	switch {
	case len(digits) == 10 && !plus && digits[0] >= '2':
		return string(digits)
	case len(digits) == 11 && digits[0] == '1' && digits[1] >= '2':
		return string(digits[1:])
	case len(digits) < 7 || len(digits) > 15:
		return ""
	}
	// Elsewhere, the library; a North American number that was not ten
	// digits above (a local seven-digit one) is not a whole number.
	n, err := phonenumbers.Parse(s, "US")
	if err != nil || n.GetCountryCode() == 1 || !phonenumbers.IsPossibleNumber(n) {
		return ""
	}
	return phonenumbers.Format(n, phonenumbers.E164)
}

// addressKey is an address as matching compares it: its first line,
// folded, with street types, directions and unit words abbreviated as the
// US Postal Service does, and the first five characters of its postal
// code; "" when either is missing.
func addressKey(a Address, fold func(string) string) string {
	var line string
	for _, l := range a.Line {
		if line = strings.TrimSpace(l); line != "" {
			break
		}
	}
	postal := strings.ToLower(strings.ReplaceAll(strings.TrimSpace(a.PostalCode), " ", ""))
	if len(postal) > 5 {
		postal = postal[:5]
	}
	if line == "" || postal == "" {
		return ""
	}
	folded := fold(line)
	b := make([]byte, 0, len(folded)+1+len(postal))
	for i := 0; i < len(folded); {
		if folded[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(folded) && folded[j] != ' ' {
			j++
		}
		w := folded[i:j]
		if folded[i] > '9' { // a word, not a number
			if abbr, ok := streetWords[w]; ok {
				w = abbr
			}
		}
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, w...)
		i = j
	}
	b = append(b, '|')
	return string(append(b, postal...))
}

// streetWords abbreviates the words of a street line (USPS Publication 28:
// street suffixes, directions, unit designators).
var streetWords = map[string]string{
	"street": "st", "str": "st", "avenue": "ave", "av": "ave", "aven": "ave", "road": "rd", "drive": "dr",
	"lane": "ln", "boulevard": "blvd", "boul": "blvd", "court": "ct", "place": "pl", "terrace": "ter",
	"circle": "cir", "highway": "hwy", "parkway": "pkwy", "square": "sq", "trail": "trl", "crescent": "cres",
	"alley": "aly", "expressway": "expy", "freeway": "fwy", "route": "rte", "center": "ctr", "plaza": "plz",
	"point": "pt", "heights": "hts", "mount": "mt", "turnpike": "tpke", "way": "way",
	"north": "n", "south": "s", "east": "e", "west": "w",
	"northeast": "ne", "northwest": "nw", "southeast": "se", "southwest": "sw",
	"apartment": "apt", "suite": "ste", "unit": "unit", "floor": "fl", "building": "bldg", "room": "rm",
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
