// Package matchtest is the evidence of matching quality: a seeded,
// deterministic generator of a synthetic population spread over three EHR
// systems with realistic corruption and hard negatives (Generate), the
// answers a name search would return of it (Answers, Answer), and
// pair-level precision and recall of the people a matcher forms (Evaluate).
//
// Its expectations are a second opinion: it knows the truth because it
// wrote the records, and it does not use the matcher's normalisation.
package matchtest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// Systems are the three EHR systems a population is spread over.
var Systems = []string{"ehr-a", "ehr-b", "ehr-c"}

// The identifier systems the records carry.
const (
	SSNSystem = "http://hl7.org/fhir/sid/us-ssn"
)

// MRNSystem is the medical record number system of an EHR system
// (urn:carebridge:ehr-a:mrn, …); each system numbers its records its own way.
func MRNSystem(source string) string { return "urn:carebridge:" + source + ":mrn" }

// Kind is a kind of hard negative: two different people whose records
// look alike.
type Kind string

// The kinds of hard negative.
const (
	Twins     Kind = "twins"     // same family, birth date, phone, address; different given names
	JrSr      Kind = "jr-sr"     // father and son: same given and family, Jr/Sr, same phone and address
	Household Kind = "household" // same family, phone and address; different given names and birth dates
	Namesake  Kind = "namesake"  // same given, family and birth date; nothing else shared
)

// Kinds lists the kinds of hard negative in the order reports show them.
var Kinds = []Kind{Twins, JrSr, Household, Namesake}

// HardNegative is a pair of true people (A < B) that no matcher may merge.
type HardNegative struct {
	A, B int
	Kind Kind
}

// Individual is one true person as the generator made them, before any
// system wrote their records.
type Individual struct {
	ID      int
	Given   string
	Middle  string
	Family  string // the family name at birth: the answer the person belongs to
	Married string // a new family name some of the person's records carry, or ""
	Suffix  string // Jr, Sr, II, III or ""
	Birth   string // YYYY-MM-DD
	Gender  string
	SSN     string // "" when the person has none
}

// Population is a synthetic population as three EHR systems hold it.
type Population struct {
	Records       []ehr.Patient
	Truth         map[ehr.SourceRef]int // the true person (index in People) of each record
	People        []Individual
	HardNegatives []HardNegative

	facts []facts // what each record says, as the generator knows it (see ceiling.go)
}

// Config holds the rates of the generator; Generate uses DefaultConfig.
type Config struct {
	// Shares of records that lack each field.
	MissingPhone, MissingEmail, MissingAddress, MissingBirthDate, MissingGender, MissingGiven float64
	// Shares of records with a nickname (of names that have one), a one-letter
	// typo in the first given name, in the family name.
	Nickname, GivenTypo, FamilyTypo float64
	// Shares of records with the day and month of the birth date swapped
	// (when the day can be a month), with one digit of it wrong.
	DateSwap, DateDigit float64
	// Share of adult women with a new family name (written in one of their
	// records, sometimes joined to the old one with a hyphen).
	Married float64
	// Share of people of several records with an old address (and, half of
	// the time, an old phone) in one of them.
	Moved float64
	// Share of people with a social security number; share of their records
	// that carry it; share of those with one digit wrong.
	SSN, SSNInRecord, SSNTypo float64
	// Shares of people in 1 and 2 systems (the rest are in all 3), and of
	// people with a second record in one system.
	OneSystem, TwoSystems, Duplicate float64
	// Hard negatives: groups per person of each kind (twins, Jr/Sr and
	// namesakes are pairs; households have 2 to 4 people).
	Twins, JrSr, Households, Namesakes float64
}

// DefaultConfig is the realistic mix the quality floors are asserted on.
func DefaultConfig() Config {
	return Config{
		MissingPhone: 0.14, MissingEmail: 0.18, MissingAddress: 0.12, MissingBirthDate: 0.12, MissingGender: 0.13,
		MissingGiven: 0.015,
		Nickname:     0.08, GivenTypo: 0.03, FamilyTypo: 0.03,
		DateSwap: 0.02, DateDigit: 0.02,
		Married: 0.20, Moved: 0.10,
		SSN: 0.30, SSNInRecord: 0.6, SSNTypo: 0.01,
		OneSystem: 0.35, TwoSystems: 0.35, Duplicate: 0.01,
		Twins: 0.012, JrSr: 0.012, Households: 0.008, Namesakes: 0.01,
	}
}

// Generate makes a population of people true people with DefaultConfig.
// The same seed gives the same population.
func Generate(seed uint64, people int) Population {
	return DefaultConfig().Generate(seed, people)
}

// Generate makes a population of people true people; the same seed gives
// the same population.
func (c Config) Generate(seed uint64, people int) Population {
	g := &gen{r: rand.New(rand.NewPCG(seed, 0x5eed_c0de_ca7e_b1d9)), c: c}
	g.familyCDF = zipf(len(families), 60)
	g.maleCDF = zipf(len(maleGiven), 25)
	g.femaleCDF = zipf(len(femaleGiven), 25)
	g.makePeople(people)

	perSystem := make([][]draft, len(Systems))
	for _, p := range g.people {
		g.place(p, perSystem)
	}

	pop := Population{Truth: map[ehr.SourceRef]int{}, HardNegatives: g.negatives}
	for _, p := range g.people {
		pop.People = append(pop.People, p.Individual)
	}
	for s, drafts := range perSystem {
		g.r.Shuffle(len(drafts), func(i, j int) { drafts[i], drafts[j] = drafts[j], drafts[i] })
		seen := map[string]bool{}
		for k, d := range drafts {
			d.rec.Source = Systems[s]
			d.rec.ID = patientID(g.r, s, k)
			mrn := g.mrn(s, seen)
			d.rec.Identifiers = append([]ehr.Identifier{{System: MRNSystem(Systems[s]), Value: mrn, Type: "MR"}}, d.rec.Identifiers...)
			d.f.source = Systems[s]
			pop.Records = append(pop.Records, d.rec)
			pop.facts = append(pop.facts, d.f)
			pop.Truth[ehr.SourceRef{Source: d.rec.Source, PatientID: d.rec.ID}] = d.f.person
		}
	}
	return pop
}

// person is a true person with what the generator keeps about them.
type person struct {
	Individual
	nicks           bool // whether records may write a nickname
	phone, oldPhone string
	email           string
	addr, oldAddr   address
	hardNegative    bool
}

type address struct {
	number    int
	direction int // -1: none
	street    string
	stype     int
	unit      string // "" or "Apt 4B", …
	place     place
	zip       string // 5 digits
	plus4     string // 4 digits
}

// key is what the contract compares of an address: the first line and the
// postal code (its first five digits), as the generator knows them.
func (a address) key() string {
	return fmt.Sprintf("%d|%d|%s|%d|%s", a.number, a.direction, a.street, a.stype, a.zip)
}

type gen struct {
	r                             *rand.Rand
	c                             Config
	familyCDF, maleCDF, femaleCDF []float64
	people                        []*person
	negatives                     []HardNegative
}

// draft is a record before its system numbers it.
type draft struct {
	rec ehr.Patient
	f   facts
}

// zipf returns the cumulative weights 1/(rank+k) of n items: a long tail
// with the most common items a few times as frequent as the middle ones.
func zipf(n int, k float64) []float64 {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range n {
		sum += 1 / (float64(i) + k)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return cdf
}

func (g *gen) pick(list []string, cdf []float64) string {
	i, _ := slices.BinarySearch(cdf, g.r.Float64())
	return list[min(i, len(list)-1)]
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) givenFor(gender string) string {
	if gender == "male" {
		return g.pick(maleGiven, g.maleCDF)
	}
	return g.pick(femaleGiven, g.femaleCDF)
}

// birth returns a date between from and to (inclusive) as YYYY-MM-DD.
func (g *gen) birth(from, to time.Time) string {
	days := int(to.Sub(from).Hours()/24) + 1
	return from.AddDate(0, 0, g.r.IntN(days)).Format(time.DateOnly)
}

var (
	earliest = time.Date(1930, 1, 1, 0, 0, 0, 0, time.UTC)
	latest   = time.Date(2020, 12, 31, 0, 0, 0, 0, time.UTC)
	asOf     = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) // the records' LastUpdated lie before
)

func (g *gen) newPerson(gender string) *person {
	if gender == "" {
		gender = []string{"male", "female"}[g.r.IntN(2)]
	}
	p := &person{Individual: Individual{ID: len(g.people), Gender: gender}}
	p.Given = g.givenFor(gender)
	if g.chance(0.6) {
		for p.Middle == "" || p.Middle == p.Given {
			p.Middle = g.givenFor(gender)
		}
	}
	p.Family = g.pick(families, g.familyCDF)
	p.Birth = g.birth(earliest, latest)
	p.nicks = len(nicknames[p.Given]) > 0
	p.addr = g.address(places[g.r.IntN(len(places))])
	p.oldAddr = g.address(p.addr.place)
	if g.chance(0.3) {
		p.oldAddr = g.address(places[g.r.IntN(len(places))])
	}
	p.phone, p.oldPhone = g.phone(p.addr.place), g.phone(p.oldAddr.place)
	p.email = g.email(p.Given, p.Family)
	if g.chance(g.c.SSN) {
		p.SSN = g.ssn()
	}
	if gender == "male" && g.chance(0.02) {
		p.Suffix = []string{"Jr", "II", "III"}[g.r.IntN(3)]
	}
	if gender == "female" && p.Birth < "2005" && g.chance(g.c.Married) {
		for p.Married == "" || p.Married == p.Family {
			p.Married = g.pick(families, g.familyCDF)
		}
		if g.chance(0.3) {
			p.Married = p.Family + "-" + p.Married
		}
	}
	return p
}

func (g *gen) add(p *person) *person {
	p.ID = len(g.people)
	g.people = append(g.people, p)
	return p
}

func (g *gen) negative(a, b *person, k Kind) {
	a.hardNegative, b.hardNegative = true, true
	g.negatives = append(g.negatives, HardNegative{A: min(a.ID, b.ID), B: max(a.ID, b.ID), Kind: k})
}

// makePeople makes n true people: the hard-negative groups first, then
// people on their own.
func (g *gen) makePeople(n int) {
	groups := func(rate float64) int { return int(math.Round(rate * float64(n))) }
	for range groups(g.c.Twins) {
		if len(g.people)+2 > n {
			break
		}
		a := g.add(g.newPerson(""))
		a.Married = ""
		b := g.newPerson("")
		b.Married, b.Suffix = "", ""
		b.Given = g.distinctGiven(b.Gender, a.Given)
		b.nicks = len(nicknames[b.Given]) > 0
		b.Family, b.Birth = a.Family, a.Birth
		b.phone, b.oldPhone, b.addr, b.oldAddr = a.phone, a.oldPhone, a.addr, a.oldAddr
		b.email = g.email(b.Given, b.Family)
		g.negative(a, g.add(b), Twins)
	}
	for range groups(g.c.JrSr) {
		if len(g.people)+2 > n {
			break
		}
		father := g.add(g.newPerson("male"))
		father.Birth = g.birth(earliest, time.Date(1980, 12, 31, 0, 0, 0, 0, time.UTC))
		father.Suffix = "Sr"
		fb, _ := time.Parse(time.DateOnly, father.Birth)
		son := g.newPerson("male")
		son.Given, son.Middle, son.Family, son.nicks = father.Given, father.Middle, father.Family, father.nicks
		son.Suffix = "Jr"
		last := fb.AddDate(40, 0, 0)
		if last.After(latest) {
			last = latest
		}
		son.Birth = g.birth(fb.AddDate(20, 0, 0), last)
		son.phone, son.oldPhone, son.addr, son.oldAddr = father.phone, father.oldPhone, father.addr, father.oldAddr
		son.email = g.email(son.Given, son.Family)
		g.negative(father, g.add(son), JrSr)
	}
	for range groups(g.c.Households) {
		size := 2 + g.r.IntN(3)
		if len(g.people)+size > n {
			break
		}
		head := g.add(g.newPerson(""))
		head.Married = ""
		members := []*person{head}
		for len(members) < size {
			m := g.newPerson("")
			m.Married, m.Family = "", head.Family
			taken := make([]string, 0, len(members))
			births := make([]string, 0, len(members))
			for _, o := range members {
				taken, births = append(taken, o.Given), append(births, o.Birth)
			}
			m.Given = g.distinctGiven(m.Gender, taken...)
			m.nicks = len(nicknames[m.Given]) > 0
			for slices.ContainsFunc(births, func(b string) bool { return b[:4] == m.Birth[:4] }) {
				m.Birth = g.birth(earliest, latest)
			}
			m.phone, m.oldPhone, m.addr, m.oldAddr = head.phone, head.oldPhone, head.addr, head.oldAddr
			m.email = g.email(m.Given, m.Family)
			for _, o := range members {
				g.negative(o, m, Household)
			}
			members = append(members, g.add(m))
		}
	}
	for range groups(g.c.Namesakes) {
		if len(g.people)+2 > n {
			break
		}
		a := g.add(g.newPerson(""))
		a.Married, a.Suffix = "", ""
		b := g.newPerson(a.Gender)
		b.Married, b.Suffix = "", ""
		b.Given, b.Family, b.Birth, b.nicks = a.Given, a.Family, a.Birth, a.nicks
		b.email = g.email(b.Given, b.Family)
		for b.email == a.email {
			b.email = g.email(b.Given, b.Family)
		}
		g.negative(a, g.add(b), Namesake)
	}
	for len(g.people) < n {
		g.add(g.newPerson(""))
	}
}

// distinctGiven draws a given name for gender that is at least three edits
// from each of taken and not a nickname of theirs (so that one typo in a
// record never brings two siblings' names within one typo).
func (g *gen) distinctGiven(gender string, taken ...string) string {
	for {
		name := g.givenFor(gender)
		if !slices.ContainsFunc(taken, func(t string) bool { return related(name, t) }) {
			return name
		}
	}
}

func related(a, b string) bool {
	if distance(plain(a), plain(b)) < 3 {
		return true
	}
	for _, n := range nicknames[a] {
		if slices.Contains(nicknames[b], n) || n == b {
			return true
		}
	}
	return slices.Contains(nicknames[b], a)
}

// place decides in which systems p has records and how each is written.
func (g *gen) place(p *person, perSystem [][]draft) {
	k := 3
	switch u := g.r.Float64(); {
	case u < g.c.OneSystem:
		k = 1
	case u < g.c.OneSystem+g.c.TwoSystems:
		k = 2
	}
	systems := g.r.Perm(len(Systems))[:k]
	if g.chance(g.c.Duplicate) {
		systems = append(systems, systems[0])
	}
	married, moved, movedPhone := -1, -1, false
	if p.Married != "" {
		married = g.r.IntN(len(systems))
		if len(systems) == 1 && g.chance(0.5) {
			married = -1
		}
	}
	if len(systems) > 1 && g.chance(g.c.Moved) {
		moved, movedPhone = g.r.IntN(len(systems)), g.chance(0.5)
	}
	for i, s := range systems {
		rec, f := g.write(p, i == married, i == moved, i == moved && movedPhone)
		perSystem[s] = append(perSystem[s], draft{rec: rec, f: f})
	}
}

// patientID is the k-th record id of system s, in that system's style.
func patientID(r *rand.Rand, s, k int) string {
	switch s {
	case 0:
		return fmt.Sprintf("pat-%06d", k+1)
	case 1:
		return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), 0x8000|r.IntN(1<<14), r.Uint64()&(1<<48-1))
	default:
		return fmt.Sprintf("%d", 100000+k*7)
	}
}

// mrn is a fresh medical record number of system s, in its style.
func (g *gen) mrn(s int, seen map[string]bool) string {
	for {
		var v string
		switch s {
		case 0:
			v = fmt.Sprintf("A%07d", g.r.IntN(10_000_000))
		case 1:
			v = fmt.Sprintf("MRN-%06d", g.r.IntN(1_000_000))
		default:
			v = fmt.Sprintf("%08d", 10_000_000+g.r.IntN(90_000_000))
		}
		if !seen[v] {
			seen[v] = true
			return v
		}
	}
}

func (g *gen) address(pl place) address {
	a := address{
		number: 1 + g.r.IntN(9899), direction: -1, street: streets[g.r.IntN(len(streets))],
		stype: g.r.IntN(len(streetTypes)), place: pl,
		zip: pl.zip3 + fmt.Sprintf("%02d", g.r.IntN(100)), plus4: fmt.Sprintf("%04d", g.r.IntN(10000)),
	}
	if g.chance(0.1) {
		a.direction = g.r.IntN(len(directions))
	}
	if g.chance(0.15) {
		a.unit = []string{"Apt ", "Unit ", "# ", "Suite "}[g.r.IntN(4)] + fmt.Sprintf("%d%s", 1+g.r.IntN(30), []string{"", "A", "B", "C"}[g.r.IntN(4)])
	}
	return a
}

// phone is a ten-digit national number in pl's area code.
func (g *gen) phone(pl place) string {
	return fmt.Sprintf("%s%d%02d%04d", pl.area, 2+g.r.IntN(8), g.r.IntN(100), g.r.IntN(10000))
}

func (g *gen) email(given, family string) string {
	local := strings.ToLower(plain(given))
	switch g.r.IntN(4) {
	case 0:
		local += "." + strings.ToLower(plain(family))
	case 1:
		local = local[:1] + strings.ToLower(plain(family))
	case 2:
		local += "_" + strings.ToLower(plain(family))
	default:
		local += strings.ToLower(plain(family))
	}
	if g.chance(0.6) {
		local += fmt.Sprintf("%d", g.r.IntN(100))
	}
	return local + "@" + mailDomains[g.r.IntN(len(mailDomains))]
}

func (g *gen) ssn() string {
	area := 1 + g.r.IntN(665)
	return fmt.Sprintf("%03d-%02d-%04d", area, 1+g.r.IntN(99), 1+g.r.IntN(9999))
}

// plain is s with accents folded and only its letters (the generator's own
// reading, for e-mail addresses and its name distances).
func plain(s string) string {
	var b strings.Builder
	for _, r := range s {
		if f, ok := fold[r]; ok {
			b.WriteString(f)
		} else if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// distance is the optimal-string-alignment edit distance of a and b, case
// ignored (a transposition of neighbours counts one).
func distance(a, b string) int {
	x, y := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
