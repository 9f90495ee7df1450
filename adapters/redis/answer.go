package redis

import (
	"encoding/json"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The search cache's format: an ehr.Answer as it is sealed into Redis. The
// records below are the only shape of it; the domain types carry no tags.
// Any change of them must bump the core's cache key version (search:v3:,
// ehr's cacheKeyPrefix), so that entries written in the old shape are never
// read in the new one (they are left to expire). answer_test.go pins it.

type (
	cacheRecord struct {
		People  []cachePerson `json:"people"`
		Records []cacheItem   `json:"records"` // a record search's items
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
		Suffix []string `json:"suffix,omitempty"`
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

// A record search's items, as the people: nil and empty slices kept apart,
// pointers (value, quantity, attachment, size) nil or not as they were.
type (
	cacheItem struct {
		ID          string              `json:"id"`
		Type        ehr.ClinicalType    `json:"type"`
		Sources     []cacheRecordSource `json:"sources"`
		PersonID    string              `json:"personId,omitempty"`
		Date        string              `json:"date,omitempty"`
		Status      string              `json:"status,omitempty"`
		Code        cacheCoding         `json:"code"`
		Text        string              `json:"text,omitempty"`
		Value       *cacheValue         `json:"value,omitempty"`
		Attachment  *cacheAttachment    `json:"attachment,omitempty"`
		LastUpdated time.Time           `json:"lastUpdated,omitzero"`
	}
	cacheRecordSource struct {
		Source    string `json:"source"`
		RecordID  string `json:"recordId"`
		PatientID string `json:"patientId"`
	}
	cacheCoding struct {
		System  string `json:"system,omitempty"`
		Code    string `json:"code,omitempty"`
		Display string `json:"display,omitempty"`
	}
	cacheValue struct {
		Quantity *cacheQuantity `json:"quantity,omitempty"`
		String   string         `json:"string,omitempty"`
	}
	// cacheQuantity keeps the decimal as the EHR wrote it, a string.
	cacheQuantity struct {
		Value string `json:"value"`
		Unit  string `json:"unit,omitempty"`
	}
	cacheAttachment struct {
		ContentType string `json:"contentType,omitempty"`
		Title       string `json:"title,omitempty"`
		Size        *int64 `json:"size,omitempty"`
	}
)

// encodeAnswer is c in the cache's format.
func encodeAnswer(c ehr.Answer) ([]byte, error) {
	return json.Marshal(cacheRecord{
		People:  convertSlice(c.People, toCachePerson),
		Records: convertSlice(c.Records, toCacheItem),
		Sources: c.Sources,
	})
}

// decodeAnswer reads an entry written by encodeAnswer.
func decodeAnswer(raw []byte) (ehr.Answer, error) {
	var r cacheRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ehr.Answer{}, err
	}
	return ehr.Answer{People: convertSlice(r.People, fromCachePerson), Records: convertSlice(r.Records, fromCacheItem), Sources: r.Sources}, nil
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

func toCacheItem(it ehr.RecordItem) cacheItem {
	c := cacheItem{
		ID: it.ID, Type: it.Type, PersonID: it.PersonID, Date: it.Date, Status: it.Status,
		Sources: convertSlice(it.Sources, func(s ehr.RecordSource) cacheRecordSource { return cacheRecordSource(s) }),
		Code:    cacheCoding(it.Code), Text: it.Text, LastUpdated: it.LastUpdated,
	}
	if v := it.Value; v != nil {
		c.Value = &cacheValue{Quantity: (*cacheQuantity)(v.Quantity), String: v.String}
	}
	if a := it.Attachment; a != nil {
		c.Attachment = &cacheAttachment{ContentType: a.ContentType, Title: a.Title, Size: a.Size}
	}
	return c
}

func fromCacheItem(c cacheItem) ehr.RecordItem {
	it := ehr.RecordItem{
		ID: c.ID, Type: c.Type, PersonID: c.PersonID, Date: c.Date, Status: c.Status,
		Sources: convertSlice(c.Sources, func(s cacheRecordSource) ehr.RecordSource { return ehr.RecordSource(s) }),
		Code:    ehr.Coding(c.Code), Text: c.Text, LastUpdated: c.LastUpdated,
	}
	if v := c.Value; v != nil {
		it.Value = &ehr.RecordValue{Quantity: (*ehr.Quantity)(v.Quantity), String: v.String}
	}
	if a := c.Attachment; a != nil {
		it.Attachment = &ehr.Attachment{ContentType: a.ContentType, Title: a.Title, Size: a.Size}
	}
	return it
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
