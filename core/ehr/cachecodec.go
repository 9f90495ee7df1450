package ehr

import (
	"encoding/json"
	"time"
)

// The search result cache's format: the merged answer as the Cache port
// stores it. The records below are the only shape of it; the domain types
// carry no tags. Any change of them must bump cacheKeyPrefix, so that
// entries written in the old shape are never read in the new one (they are
// left to expire).
const cacheKeyPrefix = "search:v2:"

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

// encodeCached is c in the cache's format.
func encodeCached(c cached) ([]byte, error) {
	return json.Marshal(cacheRecord{
		People:  convertSlice(c.People, toCachePerson),
		Sources: c.Sources,
	})
}

// decodeCached reads an entry written by encodeCached.
func decodeCached(raw []byte) (cached, error) {
	var r cacheRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return cached{}, err
	}
	return cached{People: convertSlice(r.People, fromCachePerson), Sources: r.Sources}, nil
}

func toCachePerson(p Person) cachePerson {
	return cachePerson{
		ID:          p.ID,
		Sources:     convertSlice(p.Sources, func(s SourceRef) cacheSourceRef { return cacheSourceRef(s) }),
		Name:        cacheName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i Identifier) cacheIdentifier { return cacheIdentifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t ContactPoint) cacheTelecom { return cacheTelecom(t) }),
		Address:     convertSlice(p.Address, func(a Address) cacheAddress { return cacheAddress(a) }),
		LastUpdated: p.LastUpdated,
	}
}

func fromCachePerson(p cachePerson) Person {
	return Person{
		ID:          p.ID,
		Sources:     convertSlice(p.Sources, func(s cacheSourceRef) SourceRef { return SourceRef(s) }),
		Name:        HumanName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i cacheIdentifier) Identifier { return Identifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t cacheTelecom) ContactPoint { return ContactPoint(t) }),
		Address:     convertSlice(p.Address, func(a cacheAddress) Address { return Address(a) }),
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
