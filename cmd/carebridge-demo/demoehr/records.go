package demoehr

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// The demo's clinical records: each person has a few records of each of
// the nine types, dated over the three years before today (relative to
// the day the demo starts, so the demo stays fresh; the same records for
// the same day). A person held by both systems has each type's newest
// record in both (the same code and day, so a search merges it into one
// item with both sources) and the others in one system or the other.

// recordYears is how far back the records go: every record is dated in
// the recordSpan days before today.
const (
	recordYears = 3
	recordSpan  = 1090 // days; under three years, whatever the leap days
)

// holds tells which systems hold person i's records.
func holds(i int) (fhir, bot bool) {
	return i < fhirPeople, i >= botFrom
}

// recordsOf is person i's records as of the day today, split between the
// systems: fhir those the FHIR system holds, bot those the bot holds (a
// record both hold is in both lists). The records carry the bot's ids and
// patient id (person(i).ID); the FHIR server gives its own.
func recordsOf(i int, today time.Time) (fhir, bot []ehr.Record) {
	inFHIR, inBot := holds(i)
	for ti, t := range ehr.ClinicalTypes {
		for k, r := range typeRecords(i, ti, t, today) {
			shared := inFHIR && inBot && k == 0
			// A person in both systems: the newest in both, the others
			// alternately in one.
			if inFHIR && (!inBot || shared || k%2 == 1) {
				fhir = append(fhir, r)
			}
			if inBot && (!inFHIR || shared || k%2 == 0) {
				bot = append(bot, r)
			}
		}
	}
	return fhir, bot
}

// recordCount is how many records of the type at index ti of
// ehr.ClinicalTypes person i has: two to four, four to six observations.
func recordCount(i, ti int) int {
	n := 2 + (i+ti)%3
	if ehr.ClinicalTypes[ti] == ehr.TypeObservation {
		n += 2
	}
	return n
}

// typeRecords is person i's records of type t (at index ti of
// ehr.ClinicalTypes), newest first: record k is dated in the k-th of
// recordCount equal slices of the recordSpan days before today, and
// carries its own code of the type's catalogue.
func typeRecords(i, ti int, t ehr.ClinicalType, today time.Time) []ehr.Record {
	n := recordCount(i, ti)
	codes := catalogue[t]
	span := recordSpan / n
	loc := zoneOf(i)
	out := make([]ehr.Record, n)
	for k := range out {
		h := mix(i, ti, k)
		back := 1 + k*span + int(h%uint32(span))
		at := time.Date(today.Year(), today.Month(), today.Day()-back, 8+int(h%9), 15*int(h/9%4), 0, 0, loc)
		e := codes[(i+k)%len(codes)]
		out[k] = ehr.Record{
			Type: t, ID: fmt.Sprintf("%s-%s-%d", person(i).ID, t.Snake(), k), PatientID: person(i).ID,
			Date: at.Format(time.RFC3339), Status: recordStatus(t, k), Code: e.Coding, Text: e.Display,
		}
		switch t {
		case ehr.TypeObservation:
			out[k].Value = observationValue(e, h)
		case ehr.TypeDocumentReference:
			out[k].Attachment = noteAttachment(out[k])
		}
	}
	return out
}

// mix is a deterministic hash of a record's place in the data set.
func mix(i, ti, k int) uint32 {
	f := fnv.New32a()
	fmt.Fprintf(f, "%d/%d/%d", i, ti, k)
	return f.Sum32()
}

// zoneOf is the time zone of person i's city (UTC when the system has no
// zone database).
func zoneOf(i int) *time.Location {
	zones := map[string]string{"TX": "America/Chicago", "OR": "America/Los_Angeles", "OH": "America/New_York", "NC": "America/New_York"}
	loc, err := time.LoadLocation(zones[cities[i%len(cities)].state])
	if err != nil {
		return time.UTC
	}
	return loc
}

// recordStatus is a record's status (Condition and AllergyIntolerance: the
// clinicalStatus code): older conditions resolved, older prescriptions
// completed.
func recordStatus(t ehr.ClinicalType, k int) string {
	switch t {
	case ehr.TypeEncounter:
		return "finished"
	case ehr.TypeCondition:
		if k >= 2 {
			return "resolved"
		}
		return "active"
	case ehr.TypeObservation, ehr.TypeDiagnosticReport:
		return "final"
	case ehr.TypeMedicationRequest:
		if k >= 1 {
			return "completed"
		}
		return "active"
	case ehr.TypeAllergyIntolerance:
		return "active"
	case ehr.TypeDocumentReference:
		return "current"
	}
	return "completed" // Immunization, Procedure
}

// observationValue is a synthetic value of e: its coded answer, or a
// quantity between e.low and e.high, written with at most e.decimals
// decimals and no trailing zero (as a FHIR server writes it back).
func observationValue(e entry, h uint32) *ehr.RecordValue {
	if e.answer != nil {
		return &ehr.RecordValue{String: e.answer.Display}
	}
	scale := math.Pow10(e.decimals)
	steps := uint32(math.Round((e.high - e.low) * scale))
	v := math.Round(e.low*scale+float64(h/36%(steps+1))) / scale
	return &ehr.RecordValue{Quantity: &ehr.Quantity{Value: strconv.FormatFloat(v, 'f', -1, 64), Unit: e.unit}}
}

// noteAttachment describes a DocumentReference's synthetic note: plain
// text, noteText's size.
func noteAttachment(r ehr.Record) *ehr.Attachment {
	size := int64(len(noteText(r)))
	return &ehr.Attachment{ContentType: "text/plain", Title: r.Code.Display + " " + r.Date[:len(time.DateOnly)], Size: &size}
}

// noteText is the synthetic content of a DocumentReference's note.
func noteText(r ehr.Record) string {
	return fmt.Sprintf("%s, %s. Synthetic demo note: no real person, no clinical content.\n", r.Code.Display, r.Date[:len(time.DateOnly)])
}
