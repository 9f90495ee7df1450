package wsbotserver

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

func (s *Server) searchPatients(payload json.RawMessage) (any, *protoError) {
	p, page, limit, e := decodeList[patientQuery](payload)
	if e != nil {
		return nil, e
	}
	words := strings.Fields(strings.ToLower(p.Query))
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []patientJSON
	for _, pt := range s.patients {
		name := strings.ToLower(pt.Name.Text + " " + strings.Join(pt.Name.Given, " ") + " " + pt.Name.Family)
		if !allIn(words, name) ||
			p.Birthdate != "" && pt.BirthDate != p.Birthdate ||
			p.Gender != "" && !strings.EqualFold(pt.Gender, p.Gender) ||
			p.Identifier != "" && !hasIdentifier(pt.Identifiers, p.Identifier) {
			continue
		}
		out := toPatientJSON(pt)
		if !pt.LastUpdated.IsZero() {
			out.LastUpdated = pt.LastUpdated.Format(time.RFC3339Nano)
		}
		all = append(all, out)
	}
	return pageOf(all, page, limit), nil
}

// toPatientJSON is p in the bot's wire shape (its own: the ehr types carry
// no JSON tags).
func toPatientJSON(p ehr.Patient) patientJSON {
	return patientJSON{
		ID:        p.ID,
		Name:      nameJSON{Family: p.Name.Family, Given: p.Name.Given, Text: p.Name.Text},
		BirthDate: p.BirthDate,
		Gender:    p.Gender,
		Identifiers: convertAll(p.Identifiers, func(id ehr.Identifier) identifierJSON {
			return identifierJSON{System: id.System, Value: id.Value, Type: id.Type}
		}),
		Telecom: convertAll(p.Telecom, func(t ehr.ContactPoint) telecomJSON {
			return telecomJSON{System: t.System, Value: t.Value, Use: t.Use}
		}),
		Address: convertAll(p.Address, func(a ehr.Address) addressJSON {
			return addressJSON{Line: a.Line, City: a.City, State: a.State, PostalCode: a.PostalCode, Country: a.Country}
		}),
	}
}

// convertAll converts every element of in; nil stays nil (JSON null).
func convertAll[A, B any](in []A, conv func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}

func allIn(words []string, s string) bool {
	for _, w := range words {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

func hasIdentifier(ids []ehr.Identifier, q string) bool {
	system, value, qualified := strings.Cut(q, "|")
	if !qualified {
		value = system
	}
	for _, id := range ids {
		if id.Value == value && (!qualified || id.System == system) {
			return true
		}
	}
	return false
}

// patientQuery is the payload of patients.search.
type patientQuery struct {
	Query      string `json:"query"`
	Birthdate  string `json:"birthdate"`
	Gender     string `json:"gender"`
	Identifier string `json:"identifier"`
	paging
}
