package demoehr

import (
	"fmt"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The demo's data set: synthetic people and practitioners, made the same
// way on every run. No real person is in it: the names are combinations of
// common given and family names, the phone numbers are in the 555-01xx
// range set aside for fiction, the e-mail domain is example.org. Beside
// them, cases.go places the matching cases: records made to show who is
// the same person.

// demoMRNSystem is the identifier system of the demo's medical record
// numbers; both demo EHRs use it, so the same person merges.
const demoMRNSystem = "urn:carebridge:demo:mrn"

var (
	givenNames = []string{"Ava", "Ben", "Chloe", "Diego", "Elena", "Farid", "Grace", "Hiro", "Ines", "Jonah",
		"Keisha", "Liam", "Mei", "Nikolai", "Olivia", "Priya", "Quentin", "Rosa", "Samir", "Tara"}
	familyNames = []string{"Alvarez", "Brennan", "Castillo", "Dubois", "Eriksen", "Fischer", "Gallagher", "Haddad",
		"Ivanova", "Jensen", "Kowalski", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quinn", "Rossi"}
	cities = []struct{ city, state, zip string }{
		{"Austin", "TX", "78701"}, {"Portland", "OR", "97205"}, {"Columbus", "OH", "43215"}, {"Raleigh", "NC", "27601"},
	}
)

// demoPeople is how many people the data set has; people [0, fhirPeople)
// are in the FHIR demo EHR and [botFrom, demoPeople) in the bot, so the
// ten in between are in both, with the same MRN.
const (
	demoPeople = 60
	fhirPeople = 35
	botFrom    = 25
)

// person i of the data set. Given and family names step through their
// lists at rates coprime with the lists' lengths, so no two people share
// both.
func person(i int) ehr.Patient {
	given := givenNames[i%len(givenNames)]
	family := familyNames[(i*7)%len(familyNames)]
	c := cities[i%len(cities)]
	birth := time.Date(1941, 3, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, (i*1361)%29000)
	gender := "female"
	if i%2 == 1 {
		gender = "male"
	}
	return ehr.Patient{
		ID:          fmt.Sprintf("demo-%03d", i),
		Name:        ehr.HumanName{Family: family, Given: []string{given}, Text: given + " " + family},
		BirthDate:   birth.Format(time.DateOnly),
		Gender:      gender,
		Identifiers: []ehr.Identifier{{System: demoMRNSystem, Value: fmt.Sprintf("MRN-%05d", 10000+i*37), Type: "MR"}},
		Telecom: []ehr.ContactPoint{
			{System: "phone", Value: fmt.Sprintf("+1 555 01%02d", i%100), Use: "home"},
			{System: "email", Value: fmt.Sprintf("%s.%s%d@example.org", lower(given), lower(family), i), Use: "home"},
		},
		Address: []ehr.Address{{Line: []string{fmt.Sprintf("%d Demo Street", 100+i)}, City: c.city, State: c.state, PostalCode: c.zip, Country: "US"}},
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// practitioners are the demo's bookable agents, in two time zones.
var practitioners = []ehr.Agent{
	{FirstName: "Maya", LastName: "Lindqvist", Name: "Dr. Maya Lindqvist", Specialty: "Family Medicine",
		Email: "maya.lindqvist@example.org", Timezone: "America/Chicago", LocationIDs: []string{"demo-downtown"}},
	{FirstName: "Omar", LastName: "Castillo", Name: "Dr. Omar Castillo", Specialty: "Cardiology",
		Email: "omar.castillo@example.org", Timezone: "America/New_York", LocationIDs: []string{"demo-uptown"}},
	{FirstName: "Lena", LastName: "Okafor", Name: "Dr. Lena Okafor", Specialty: "Pediatrics",
		Email: "lena.okafor@example.org", Timezone: "America/Chicago", LocationIDs: []string{"demo-downtown"}},
}

// scheduleDays is how far ahead the practitioners' calendars are open.
const scheduleDays = 14

// freeTime is a practitioner's open hours, 09:00 to 17:00 in zone on each
// of the scheduleDays days after today's date there (Sundays closed).
func freeTime(zone string, now time.Time) []ehr.Period {
	loc, err := time.LoadLocation(zone)
	if err != nil {
		loc = time.UTC
	}
	today := now.In(loc)
	var free []ehr.Period
	for d := 1; d <= scheduleDays; d++ {
		day := time.Date(today.Year(), today.Month(), today.Day()+d, 0, 0, 0, 0, loc)
		if day.Weekday() == time.Sunday {
			continue
		}
		free = append(free, ehr.Period{
			Start: time.Date(day.Year(), day.Month(), day.Day(), 9, 0, 0, 0, loc),
			End:   time.Date(day.Year(), day.Month(), day.Day(), 17, 0, 0, 0, loc),
		})
	}
	return free
}

// fhirPatient is person p as a FHIR R4 Patient resource.
func fhirPatient(p ehr.Patient) map[string]any {
	var telecom, ids, addrs []any
	for _, t := range p.Telecom {
		telecom = append(telecom, map[string]any{"system": t.System, "value": t.Value, "use": t.Use})
	}
	for _, id := range p.Identifiers {
		ids = append(ids, map[string]any{"system": id.System, "value": id.Value,
			"type": map[string]any{"coding": []any{map[string]any{"system": "http://terminology.hl7.org/CodeSystem/v2-0203", "code": id.Type}}}})
	}
	for _, a := range p.Address {
		addr := map[string]any{"city": a.City, "state": a.State, "postalCode": a.PostalCode, "country": a.Country}
		if len(a.Line) > 0 {
			addr["line"] = []any{a.Line[0]}
		}
		addrs = append(addrs, addr)
	}
	r := map[string]any{
		"resourceType": "Patient",
		"name":         []any{map[string]any{"use": "official", "family": p.Name.Family, "given": []any{p.Name.Given[0]}}},
		"birthDate":    p.BirthDate,
		"gender":       p.Gender,
	}
	// FHIR JSON has no empty arrays (nor nulls): a record without contact
	// details (a matching case's) leaves the elements out.
	for k, v := range map[string][]any{"identifier": ids, "telecom": telecom, "address": addrs} {
		if len(v) > 0 {
			r[k] = v
		}
	}
	return r
}
