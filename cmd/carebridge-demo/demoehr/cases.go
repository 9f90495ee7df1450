package demoehr

import "github.com/carebridge/carebridge/core/ehr"

// The demo's matching cases: records placed on purpose, beside the
// generated people, to show the contract's rule of who is the same person
// (CONTRACT.md, "Who is the same person"). Each case is two records, one
// in each system (without the FHIR demo both in the bot), under a family
// name no other demo person has, so a search for that family name answers
// the case alone. Like the rest of the data set they are synthetic: made-up
// names, phone numbers in the 555-01xx range kept for fiction, example.org
// e-mail addresses.
//
// The records of the cases carry each system's own MRN (unlike the
// generated people in both systems, who share one): two records of a case
// never share an identifier, and never clash on one either (the systems
// differ), so name, birth date and contact details alone decide.

// The MRN systems of the cases' records: the FHIR server's and the bot's.
const (
	FHIRMRNSystem = "urn:carebridge:demo-fhir:mrn"
	BotMRNSystem  = "urn:carebridge:demo-bot:mrn"
)

// The matching cases' names.
const (
	// CaseTypo is one woman written two ways: "Marisabel" in the FHIR
	// server, "Marisabell" in the bot (one typo), the same birth date, the
	// same phone and address written differently, other MRNs: one person,
	// certain by name, birth date and a contact detail.
	CaseTypo = "typo"
	// CaseNamesakes are two women of one name and one birth date whose
	// phones, e-mails, addresses and MRNs all differ: two people (at most
	// each other's possible match).
	CaseNamesakes = "namesakes"
	// CaseHousehold is two people of one family, phone and address, with
	// other given names and birth dates: two people, neither a possible
	// match of the other.
	CaseHousehold = "household"
	// CaseProbable is one name and birth date in both systems, one record
	// with a phone, e-mail and address and the other with no contact
	// detail at all: two people, each the other's possible match, until a
	// member links them (`make run` prints the link).
	CaseProbable = "probable"
)

// A Case is one matching case: its two records, the one the FHIR server
// holds and the one the bot holds. The records carry bot ids (the FHIR
// server gives its own).
type Case struct {
	Name, Family string
	FHIR, Bot    ehr.Patient
}

// Cases are the matching cases, in the order above.
func Cases() []Case {
	return []Case{
		{Name: CaseTypo, Family: "Varnettsky",
			FHIR: casePerson("case-typo-1", "Marisabel", "Varnettsky", "female", "1986-04-19", FHIRMRNSystem, "F-70001",
				phone("+1-217-555-0163"), address("12 Elm St", "Springfield", "IL", "62701")),
			Bot: casePerson("case-typo-2", "Marisabell", "Varnettsky", "female", "1986-04-19", BotMRNSystem, "B-80001",
				phone("(217) 555-0163"), address("12 Elm Street", "Springfield", "IL", "62701")),
		},
		{Name: CaseNamesakes, Family: "Quillon",
			FHIR: casePerson("case-namesakes-1", "Odessa", "Quillon", "female", "1979-11-02", FHIRMRNSystem, "F-70002",
				phone("+1 512 555 0171"), email("odessa.quillon@example.org"), address("48 Birch Road", "Austin", "TX", "78701")),
			Bot: casePerson("case-namesakes-2", "Odessa", "Quillon", "female", "1979-11-02", BotMRNSystem, "B-80002",
				phone("+1 614 555 0172"), email("o.quillon79@example.org"), address("907 Lakeview Drive", "Columbus", "OH", "43215")),
		},
		{Name: CaseHousehold, Family: "Tamsworth",
			FHIR: casePerson("case-household-1", "Delphine", "Tamsworth", "female", "1958-06-30", FHIRMRNSystem, "F-70003",
				phone("+1 503 555 0184"), email("delphine.tamsworth@example.org"), address("77 Orchard Lane", "Portland", "OR", "97205")),
			Bot: casePerson("case-household-2", "Caspian", "Tamsworth", "male", "1991-01-14", BotMRNSystem, "B-80003",
				phone("(503) 555-0184"), email("caspian.tamsworth@example.org"), address("77 Orchard Lane", "Portland", "OR", "97205")),
		},
		{Name: CaseProbable, Family: "Penhallow",
			FHIR: casePerson("case-probable-1", "Theodora", "Penhallow", "female", "1972-08-09", FHIRMRNSystem, "F-70004",
				phone("+1 919 555 0192"), email("theodora.penhallow@example.org"), address("5 Harbour View", "Raleigh", "NC", "27601")),
			Bot: casePerson("case-probable-2", "Theodora", "Penhallow", "female", "1972-08-09", BotMRNSystem, "B-80004"),
		},
	}
}

// CaseFamily is the family name of the case named name ("" when there is
// no such case).
func CaseFamily(name string) string {
	for _, c := range Cases() {
		if c.Name == name {
			return c.Family
		}
	}
	return ""
}

// contact is a contact detail of a case's record: a phone, an e-mail or an
// address.
type contact func(*ehr.Patient)

func phone(v string) contact {
	return func(p *ehr.Patient) {
		p.Telecom = append(p.Telecom, ehr.ContactPoint{System: "phone", Value: v, Use: "home"})
	}
}

func email(v string) contact {
	return func(p *ehr.Patient) {
		p.Telecom = append(p.Telecom, ehr.ContactPoint{System: "email", Value: v, Use: "home"})
	}
}

func address(line, city, state, zip string) contact {
	return func(p *ehr.Patient) {
		p.Address = append(p.Address, ehr.Address{Line: []string{line}, City: city, State: state, PostalCode: zip, Country: "US"})
	}
}

func casePerson(id, given, family, gender, birth, mrnSystem, mrn string, contacts ...contact) ehr.Patient {
	p := ehr.Patient{
		ID:          id,
		Name:        ehr.HumanName{Family: family, Given: []string{given}, Text: given + " " + family},
		BirthDate:   birth,
		Gender:      gender,
		Identifiers: []ehr.Identifier{{System: mrnSystem, Value: mrn, Type: "MR"}},
	}
	for _, c := range contacts {
		c(&p)
	}
	return p
}
