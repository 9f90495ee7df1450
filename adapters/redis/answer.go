package redis

import (
	"encoding/json"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The search cache's format: an ehr.Answer as it is sealed into Redis. The
// records below are the only shape of it; the domain types carry no tags.
// Any change of them must bump the core's cache key version (search:v2:,
// ehr's cacheKeyPrefix), so that entries written in the old shape are never
// read in the new one (they are left to expire). answer_test.go pins it.

type (
	cacheRecord struct {
		People  []cachePerson `json:"people"`
		Sources []string      `json:"sources"`
	}
	// cachePerson keeps nil and empty slices apart (no omitempty on
	// slices): a decoded answer equals the encoded one.
	cachePerson struct {
		ID          string            `json:"id"`
		Sources     []cacheSourceRef  `json:"sources"`
		Name        cacheName         `json:"name"`
		BirthDate   string            `json:"birthDate,omitempty"`
		Gender      string            `json:"gender,omitempty"`
		Identifiers []cacheIdentifier `json:"identifiers"`
		Telecom     []cacheTelecom    `json:"telecom"`
		Address     []cacheAddress    `json:"address"`
		LastUpdated time.Time         `json:"lastUpdated,omitzero"`
	}
	cacheSourceRef struct {
		Source    string `json:"source"`
		PatientID string `json:"patientId"`
	}
	cacheName struct {
		Family string   `json:"family,omitempty"`
		Given  []string `json:"given"`
		Text   string   `json:"text,omitempty"`
	}
	cacheIdentifier struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value,omitempty"`
		Type   string `json:"type,omitempty"`
	}
	cacheTelecom struct {
		System string `json:"system,omitempty"`
		Value  string `json:"value,omitempty"`
		Use    string `json:"use,omitempty"`
	}
	cacheAddress struct {
		Line       []string `json:"line"`
		City       string   `json:"city,omitempty"`
		State      string   `json:"state,omitempty"`
		PostalCode string   `json:"postalCode,omitempty"`
		Country    string   `json:"country,omitempty"`
	}
)

// encodeAnswer is c in the cache's format.
func encodeAnswer(c ehr.Answer) ([]byte, error) {
	return json.Marshal(cacheRecord{
		People:  convertSlice(c.People, toCachePerson),
		Sources: c.Sources,
	})
}

// decodeAnswer reads an entry written by encodeAnswer.
func decodeAnswer(raw []byte) (ehr.Answer, error) {
	var r cacheRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ehr.Answer{}, err
	}
	return ehr.Answer{People: convertSlice(r.People, fromCachePerson), Sources: r.Sources}, nil
}

func toCachePerson(p ehr.Person) cachePerson {
	return cachePerson{
		ID:          p.ID,
		Sources:     convertSlice(p.Sources, func(s ehr.SourceRef) cacheSourceRef { return cacheSourceRef(s) }),
		Name:        cacheName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i ehr.Identifier) cacheIdentifier { return cacheIdentifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t ehr.ContactPoint) cacheTelecom { return cacheTelecom(t) }),
		Address:     convertSlice(p.Address, func(a ehr.Address) cacheAddress { return cacheAddress(a) }),
		LastUpdated: p.LastUpdated,
	}
}

func fromCachePerson(p cachePerson) ehr.Person {
	return ehr.Person{
		ID:          p.ID,
		Sources:     convertSlice(p.Sources, func(s cacheSourceRef) ehr.SourceRef { return ehr.SourceRef(s) }),
		Name:        ehr.HumanName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i cacheIdentifier) ehr.Identifier { return ehr.Identifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t cacheTelecom) ehr.ContactPoint { return ehr.ContactPoint(t) }),
		Address:     convertSlice(p.Address, func(a cacheAddress) ehr.Address { return ehr.Address(a) }),
		LastUpdated: p.LastUpdated,
	}
}

// convertSlice converts every element of in; nil stays nil and empty
// stays empty.
func convertSlice[T, U any](in []T, conv func(T) U) []U {
	if in == nil {
		return nil
	}
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = conv(v)
	}
	return out
}
