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
	"math/rand/v2"
	"slices"
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
