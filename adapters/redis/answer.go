package redis

import (
	"encoding/json"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The search cache's format: an ehr.Answer (what the EHR systems answered,
// before matching) as it is sealed into Redis. The records below are the
// only shape of it; the domain types carry no tags. Any change of them
// must bump the core's cache key version (search:v4:, ehr's
// cacheKeyPrefix), so that entries written in the old shape are never
// read in the new one (they are left to expire). answer_test.go pins it.

type (
	cacheRecord struct {
		Patients   []cachePatient   `json:"patients"`
		RecordSets []cacheRecordSet `json:"recordSets"` // a record search's records, per system
		Sources    []string         `json:"sources"`
	}
	// cachePatient keeps nil and empty slices apart (no omitempty on
	// slices): a decoded answer equals the encoded one.
	cachePatient struct {
		ID          string            `json:"id"`
		Source      string            `json:"source"`
		Name        cacheName         `json:"name"`
		BirthDate   string            `json:"birthDate,omitempty"`
		Gender      string            `json:"gender,omitempty"`
		Identifiers []cacheIdentifier `json:"identifiers"`
		Telecom     []cacheTelecom    `json:"telecom"`
		Address     []cacheAddress    `json:"address"`
		LastUpdated time.Time         `json:"lastUpdated,omitzero"`
	}
	cacheName struct {
		Family string   `json:"family,omitempty"`
		Given  []string `json:"given"`
		Text   string   `json:"text,omitempty"`
		Suffix []string `json:"suffix"`
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

// A record search's records, per system, as the patients: nil and empty
// slices kept apart, pointers (value, quantity, attachment, size) nil or
// not as they were.
type (
	cacheRecordSet struct {
		Source  string      `json:"source"`
		Records []cacheItem `json:"records"`
	}
	cacheItem struct {
		Type        ehr.ClinicalType `json:"type"`
		ID          string           `json:"id"`
		PatientID   string           `json:"patientId"`
		Date        string           `json:"date,omitempty"`
		Status      string           `json:"status,omitempty"`
		Code        cacheCoding      `json:"code"`
		Text        string           `json:"text,omitempty"`
		Value       *cacheValue      `json:"value,omitempty"`
		Attachment  *cacheAttachment `json:"attachment,omitempty"`
		LastUpdated time.Time        `json:"lastUpdated,omitzero"`
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
		Patients:   convertSlice(c.Patients, toCachePatient),
		RecordSets: convertSlice(c.RecordSets, toCacheRecordSet),
		Sources:    c.Sources,
	})
}

// decodeAnswer reads an entry written by encodeAnswer.
func decodeAnswer(raw []byte) (ehr.Answer, error) {
	var r cacheRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		return ehr.Answer{}, err
	}
	return ehr.Answer{Patients: convertSlice(r.Patients, fromCachePatient), RecordSets: convertSlice(r.RecordSets, fromCacheRecordSet), Sources: r.Sources}, nil
}

func toCachePatient(p ehr.Patient) cachePatient {
	return cachePatient{
		ID:          p.ID,
		Source:      p.Source,
		Name:        cacheName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i ehr.Identifier) cacheIdentifier { return cacheIdentifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t ehr.ContactPoint) cacheTelecom { return cacheTelecom(t) }),
		Address:     convertSlice(p.Address, func(a ehr.Address) cacheAddress { return cacheAddress(a) }),
		LastUpdated: p.LastUpdated,
	}
}

func fromCachePatient(p cachePatient) ehr.Patient {
	return ehr.Patient{
		ID:          p.ID,
		Source:      p.Source,
		Name:        ehr.HumanName(p.Name),
		BirthDate:   p.BirthDate,
		Gender:      p.Gender,
		Identifiers: convertSlice(p.Identifiers, func(i cacheIdentifier) ehr.Identifier { return ehr.Identifier(i) }),
		Telecom:     convertSlice(p.Telecom, func(t cacheTelecom) ehr.ContactPoint { return ehr.ContactPoint(t) }),
		Address:     convertSlice(p.Address, func(a cacheAddress) ehr.Address { return ehr.Address(a) }),
		LastUpdated: p.LastUpdated,
	}
}

func toCacheRecordSet(s ehr.SourceRecords) cacheRecordSet {
	return cacheRecordSet{Source: s.Source, Records: convertSlice(s.Records, toCacheItem)}
}

func fromCacheRecordSet(s cacheRecordSet) ehr.SourceRecords {
	return ehr.SourceRecords{Source: s.Source, Records: convertSlice(s.Records, fromCacheItem)}
}

func toCacheItem(r ehr.Record) cacheItem {
	c := cacheItem{
		Type: r.Type, ID: r.ID, PatientID: r.PatientID, Date: r.Date, Status: r.Status,
		Code: cacheCoding(r.Code), Text: r.Text, LastUpdated: r.LastUpdated,
	}
	if v := r.Value; v != nil {
		c.Value = &cacheValue{Quantity: (*cacheQuantity)(v.Quantity), String: v.String}
	}
	if a := r.Attachment; a != nil {
		c.Attachment = &cacheAttachment{ContentType: a.ContentType, Title: a.Title, Size: a.Size}
	}
	return c
}

func fromCacheItem(c cacheItem) ehr.Record {
	r := ehr.Record{
		Type: c.Type, ID: c.ID, PatientID: c.PatientID, Date: c.Date, Status: c.Status,
		Code: ehr.Coding(c.Code), Text: c.Text, LastUpdated: c.LastUpdated,
	}
	if v := c.Value; v != nil {
		r.Value = &ehr.RecordValue{Quantity: (*ehr.Quantity)(v.Quantity), String: v.String}
	}
	if a := c.Attachment; a != nil {
		r.Attachment = &ehr.Attachment{ContentType: a.ContentType, Title: a.Title, Size: a.Size}
	}
	return r
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
