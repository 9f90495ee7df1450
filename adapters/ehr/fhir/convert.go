package fhir

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The FHIR R4 wire types, reduced to what the search reads. Unknown
// elements (extensions, _elements, contained resources) are ignored.
type (
	resourceHeader struct {
		ResourceType string `json:"resourceType"`
		ID           string `json:"id"`
	}

	bundle struct {
		ResourceType string        `json:"resourceType"`
		ID           string        `json:"id"` // decoded so that a bad id fails as checkResourceType fails
		Total        *int          `json:"total"`
		Link         []bundleLink  `json:"link"`
		Entry        []bundleEntry `json:"entry"`
		// date is the server's clock when it answered with the Bundle
		// (its HTTP Date header; zero when it sent none), set by the
		// paged search.
		date time.Time
	}
	bundleLink struct {
		Relation string `json:"relation"`
		URL      string `json:"url"`
	}
	bundleEntry struct {
		Resource json.RawMessage `json:"resource"`
		Search   struct {
			Mode string `json:"mode"`
		} `json:"search"`
	}

	patient struct {
		ID   string `json:"id"`
		Meta struct {
			LastUpdated string `json:"lastUpdated"`
		} `json:"meta"`
		Name       []humanName    `json:"name"`
		BirthDate  string         `json:"birthDate"`
		Gender     string         `json:"gender"`
		Identifier []identifier   `json:"identifier"`
		Telecom    []contactPoint `json:"telecom"`
		Address    []address      `json:"address"`
	}
	humanName struct {
		Use    string   `json:"use"`
		Text   string   `json:"text"`
		Family string   `json:"family"`
		Given  []string `json:"given"`
		Suffix []string `json:"suffix"`
	}
	identifier struct {
		System string          `json:"system"`
		Value  string          `json:"value"`
		Type   codeableConcept `json:"type"`
	}
	codeableConcept struct {
		Coding []coding `json:"coding"`
		Text   string   `json:"text"`
	}
	coding struct {
		System  string `json:"system"`
		Code    string `json:"code"`
		Display string `json:"display"`
	}
	contactPoint struct {
		System string `json:"system"`
		Value  string `json:"value"`
		Use    string `json:"use"`
	}
	address struct {
		Line       []string `json:"line"`
		City       string   `json:"city"`
		State      string   `json:"state"`
		PostalCode string   `json:"postalCode"`
		Country    string   `json:"country"`
	}

	operationOutcome struct {
		Issue []struct {
			Severity    string          `json:"severity"`
			Code        string          `json:"code"`
			Diagnostics string          `json:"diagnostics"`
			Details     codeableConcept `json:"details"`
		} `json:"issue"`
	}
)

// page is one decoded search page.
type page struct {
	patients []ehr.Patient
	next     string // the next link as sent, "" on the last page
}

// decodeError says, in words fit for a client, why a body is not a usable
// search answer; err is the cause, for logs.
type decodeError struct {
	msg string
	err error
}

func (e *decodeError) Error() string { return e.msg }
func (e *decodeError) Unwrap() error { return e.err }

// decodeBundle reads a search answer: a Bundle whose Patient entries
// become records of source. Entries of other types (such as the
// OperationOutcome a server adds with search mode "outcome") are skipped.
// The error, a *decodeError, names what is wrong.
func decodeBundle(body []byte, source string) (page, error) {
	b, err := readBundle(body)
	if err != nil {
		return page{}, err
	}
	pg := page{patients: make([]ehr.Patient, 0, len(b.Entry)), next: b.next()}
	for i, e := range b.Entry {
		if m := e.Search.Mode; m == "outcome" || m == "include" {
			continue
		}
		var rh resourceHeader
		if len(e.Resource) == 0 || json.Unmarshal(e.Resource, &rh) != nil || rh.ResourceType != "Patient" {
			continue
		}
		var p patient
		if err := json.Unmarshal(e.Resource, &p); err != nil {
			return page{}, &decodeError{fmt.Sprintf("entry %d is not a valid Patient", i), err}
		}
		pg.patients = append(pg.patients, toPatient(p, source))
	}
	return pg, nil
}

// readBundle checks that body is a FHIR Bundle and decodes it (the
// scheduler shares it with decodeBundle). The error, a *decodeError, names
// what is wrong. A good Bundle is decoded once (a page of 100 resources
// costs a record search some milliseconds a decode); only a body that
// fails is looked at again, to name the failure.
func readBundle(body []byte) (bundle, error) {
	var b bundle
	if err := json.Unmarshal(body, &b); err == nil && b.ResourceType == "Bundle" {
		return b, nil
	}
	if err := checkResourceType(body, "Bundle"); err != nil {
		return bundle{}, err
	}
	b = bundle{}
	if err := json.Unmarshal(body, &b); err != nil {
		return bundle{}, &decodeError{"the Bundle is malformed", err}
	}
	return b, nil
}

// checkResourceType makes sure body is a FHIR resource of type want; the
// error, a *decodeError, names what it is instead.
func checkResourceType(body []byte, want string) error {
	var hdr resourceHeader
	if err := json.Unmarshal(body, &hdr); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || !json.Valid(body) {
			return &decodeError{"the body is not valid JSON", err}
		}
		return &decodeError{"the body is not a FHIR resource", err}
	}
	switch hdr.ResourceType {
	case want:
		return nil
	case "":
		return &decodeError{"the body is not a FHIR resource", nil}
	case "OperationOutcome":
		msg := "it is an OperationOutcome, not " + article(want)
		if text := outcomeText(body); text != "" {
			msg += ": " + text
		}
		return &decodeError{msg, nil}
	default:
		return &decodeError{fmt.Sprintf("it is %s, not %s", article(clipN(hdr.ResourceType, 64)), article(want)), nil}
	}
}

// article puts "a" or "an" before a resource type's name.
func article(name string) string {
	if name != "" && strings.ContainsRune("AEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// next is the Bundle's next link as sent, "" on the last page.
func (b bundle) next() string {
	for _, l := range b.Link {
		if l.Relation == "next" && strings.TrimSpace(l.URL) != "" {
			return strings.TrimSpace(l.URL)
		}
	}
	return ""
}

// toPatient converts a FHIR Patient into the internal record: it picks
// the name to show and the identifiers' types, and leaves the rest of the
// rule (trimming, dropping empty entries) to ehr.NormalPatient.
func toPatient(p patient, source string) ehr.Patient {
	out := ehr.Patient{
		ID:          p.ID,
		Source:      source,
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		LastUpdated: ehr.NormalTime(p.Meta.LastUpdated),
	}
	if n := pickName(p.Name); n != nil {
		out.Name = toName(*n)
	}
	for _, id := range p.Identifier {
		out.Identifiers = append(out.Identifiers, ehr.Identifier{System: id.System, Value: id.Value, Type: identifierType(id.Type)})
	}
	for _, t := range p.Telecom {
		out.Telecom = append(out.Telecom, ehr.ContactPoint(t))
	}
	for _, a := range p.Address {
		out.Address = append(out.Address, ehr.Address(a))
	}
	return ehr.NormalPatient(out)
}

// pickName chooses the name to show: the official one, else the first
// that is not marked old, else the first; names with no text, family or
// given part are passed over.
func pickName(names []humanName) *humanName {
	var first, current *humanName
	for i := range names {
		n := &names[i]
		if strings.TrimSpace(n.Text) == "" && strings.TrimSpace(n.Family) == "" && len(ehr.NonEmpty(n.Given)) == 0 {
			continue
		}
		if n.Use == "official" {
			return n
		}
		if first == nil {
			first = n
		}
		if current == nil && n.Use != "old" {
			current = n
		}
	}
	if current != nil {
		return current
	}
	return first
}

// toName is n in the internal shape, as sent (ehr.NormalName normalises it).
func toName(n humanName) ehr.HumanName {
	return ehr.HumanName{Family: n.Family, Given: n.Given, Text: n.Text, Suffix: n.Suffix}
}

// identifierType is the code of an identifier's type (v2-0203 "MR" for a
// medical record number), else its text.
func identifierType(cc codeableConcept) string {
	for _, c := range cc.Coding {
		if code := strings.TrimSpace(c.Code); code != "" {
			return code
		}
	}
	return strings.TrimSpace(cc.Text)
}

// outcomeText is the human text of an OperationOutcome body: for each issue
// its details text and diagnostics (else a coding's display, else its
// code), joined and clipped; "" when body is not an OperationOutcome.
func outcomeText(body []byte) string {
	var hdr resourceHeader
	if json.Unmarshal(body, &hdr) != nil || hdr.ResourceType != "OperationOutcome" {
		return ""
	}
	var oo operationOutcome
	if json.Unmarshal(body, &oo) != nil {
		return ""
	}
	var parts []string
	seen := make(map[string]bool)
	add := func(s string) bool {
		s = clip(s)
		if s == "" {
			return false
		}
		if !seen[s] {
			seen[s] = true
			parts = append(parts, s)
		}
		return true
	}
	for _, is := range oo.Issue {
		got := add(is.Details.Text)
		got = add(is.Diagnostics) || got
		for _, c := range is.Details.Coding {
			if got {
				break
			}
			got = add(c.Display)
		}
		if !got {
			add(is.Code)
		}
	}
	return clip(strings.Join(parts, "; "))
}

// clipN clips upstream text to n bytes for a message.
func clipN(s string, n int) string { return ehr.ClipText(s, n) }
