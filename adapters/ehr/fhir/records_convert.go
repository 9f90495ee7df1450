package fhir

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/carebridge/carebridge/core/ehr"
)

// The FHIR R4 clinical resources, reduced to what a record item reads
// (see the contract, *Clinical records*). A DocumentReference's attachment
// is read without its url and data: they are never decoded.
type (
	recordPeriod struct {
		Start string `json:"start"`
	}
	// recordBase holds the elements every clinical resource shares.
	recordBase struct {
		ResourceType string `json:"resourceType"`
		ID           string `json:"id"`
		Meta         meta   `json:"meta"`
		Status       string `json:"status"`
	}

	encounterResource struct {
		recordBase
		Class   coding            `json:"class"` // R4: one Coding
		Type    []codeableConcept `json:"type"`
		Subject reference         `json:"subject"`
		Period  recordPeriod      `json:"period"`
	}
	conditionResource struct {
		recordBase
		ClinicalStatus codeableConcept `json:"clinicalStatus"`
		Code           codeableConcept `json:"code"`
		Subject        reference       `json:"subject"`
		OnsetDateTime  string          `json:"onsetDateTime"`
		OnsetPeriod    recordPeriod    `json:"onsetPeriod"`
		RecordedDate   string          `json:"recordedDate"`
	}
	observationResource struct {
		recordBase
		Code                 codeableConcept  `json:"code"`
		Subject              reference        `json:"subject"`
		EffectiveDateTime    string           `json:"effectiveDateTime"`
		EffectivePeriod      recordPeriod     `json:"effectivePeriod"`
		Issued               string           `json:"issued"`
		ValueQuantity        *quantity        `json:"valueQuantity"`
		ValueString          *string          `json:"valueString"`
		ValueCodeableConcept *codeableConcept `json:"valueCodeableConcept"`
	}
	quantity struct {
		Value json.Number `json:"value"` // the decimal as written: "5.40" stays "5.40"
		Unit  string      `json:"unit"`
		Code  string      `json:"code"`
	}
	medicationRequestResource struct {
		recordBase
		Medication codeableConcept `json:"medicationCodeableConcept"`
		Subject    reference       `json:"subject"`
		AuthoredOn string          `json:"authoredOn"`
	}
	allergyIntoleranceResource struct {
		recordBase
		ClinicalStatus codeableConcept `json:"clinicalStatus"`
		Code           codeableConcept `json:"code"`
		Patient        reference       `json:"patient"`
		RecordedDate   string          `json:"recordedDate"`
		OnsetDateTime  string          `json:"onsetDateTime"`
	}
	immunizationResource struct {
		recordBase
		VaccineCode        codeableConcept `json:"vaccineCode"`
		Patient            reference       `json:"patient"`
		OccurrenceDateTime string          `json:"occurrenceDateTime"`
	}
	procedureResource struct {
		recordBase
		Code              codeableConcept `json:"code"`
		Subject           reference       `json:"subject"`
		PerformedDateTime string          `json:"performedDateTime"`
		PerformedPeriod   recordPeriod    `json:"performedPeriod"`
	}
	documentReferenceResource struct {
		recordBase
		Type    codeableConcept `json:"type"`
		Subject reference       `json:"subject"`
		Date    string          `json:"date"`
		Context struct {
			Period recordPeriod `json:"period"`
		} `json:"context"`
		Content []struct {
			Attachment attachment `json:"attachment"`
		} `json:"content"`
	}
	// attachment has no url or data on purpose: a record never carries a
	// document's content or its address.
	attachment struct {
		ContentType string      `json:"contentType"`
		Title       string      `json:"title"`
		Size        json.Number `json:"size"`
	}
	diagnosticReportResource struct {
		recordBase
		Code              codeableConcept `json:"code"`
		Subject           reference       `json:"subject"`
		EffectiveDateTime string          `json:"effectiveDateTime"`
		EffectivePeriod   recordPeriod    `json:"effectivePeriod"`
		Issued            string          `json:"issued"`
	}
)

// toRecord converts one FHIR resource of type t into a record, following
// the contract's rules for its date, code, text, status, value and
// attachment. A body that is not valid JSON, not a resource of type t, has
// no id or does not decode as t is a *decodeError whose message holds no
// patient data (the search reports it as ehr_bad_response).
func toRecord(t ehr.ClinicalType, raw json.RawMessage) (ehr.Record, error) {
	if err := checkResourceType(raw, string(t)); err != nil {
		return ehr.Record{}, err
	}
	return convertTyped(t, raw)
}

// convertTyped is toRecord for a resource already known to be valid JSON
// of type t (an entry of a search page, whose header the page walk has
// decoded): it skips toRecord's second decode of the header, one of the
// costs of a record search on its critical path.
func convertTyped(t ehr.ClinicalType, raw json.RawMessage) (ehr.Record, error) {
	switch t {
	case ehr.TypeEncounter:
		return convertRecord(t, raw, fromEncounter)
	case ehr.TypeCondition:
		return convertRecord(t, raw, fromCondition)
	case ehr.TypeObservation:
		return convertRecord(t, raw, fromObservation)
	case ehr.TypeMedicationRequest:
		return convertRecord(t, raw, fromMedicationRequest)
	case ehr.TypeAllergyIntolerance:
		return convertRecord(t, raw, fromAllergyIntolerance)
	case ehr.TypeImmunization:
		return convertRecord(t, raw, fromImmunization)
	case ehr.TypeProcedure:
		return convertRecord(t, raw, fromProcedure)
	case ehr.TypeDocumentReference:
		return convertRecord(t, raw, fromDocumentReference)
	case ehr.TypeDiagnosticReport:
		return convertRecord(t, raw, fromDiagnosticReport)
	default:
		return ehr.Record{}, fmt.Errorf("fhir: %q is not a clinical record type", clipN(string(t), 64))
	}
}

func fromEncounter(e encounterResource) (recordBase, ehr.Record) {
	cc := codeableConcept{Coding: []coding{e.Class}}
	if len(e.Type) > 0 {
		cc.Text = e.Type[0].Text
		if len(e.Type[0].Coding) > 0 {
			cc.Coding = e.Type[0].Coding
		}
	}
	return e.recordBase, ehr.Record{PatientID: patientID(e.Subject), Date: e.Period.Start, Status: e.Status,
		Code: firstCoding(cc), Text: recordText(cc)}
}

func fromCondition(c conditionResource) (recordBase, ehr.Record) {
	return c.recordBase, ehr.Record{PatientID: patientID(c.Subject),
		Date:   firstDate(c.OnsetDateTime, c.OnsetPeriod.Start, c.RecordedDate),
		Status: firstCoding(c.ClinicalStatus).Code, Code: firstCoding(c.Code), Text: recordText(c.Code)}
}

func fromObservation(o observationResource) (recordBase, ehr.Record) {
	return o.recordBase, ehr.Record{PatientID: patientID(o.Subject),
		Date:   firstDate(o.EffectiveDateTime, o.EffectivePeriod.Start, o.Issued),
		Status: o.Status, Code: firstCoding(o.Code), Text: recordText(o.Code), Value: observationValue(o)}
}

func fromMedicationRequest(m medicationRequestResource) (recordBase, ehr.Record) {
	return m.recordBase, ehr.Record{PatientID: patientID(m.Subject), Date: m.AuthoredOn, Status: m.Status,
		Code: firstCoding(m.Medication), Text: recordText(m.Medication)}
}

func fromAllergyIntolerance(a allergyIntoleranceResource) (recordBase, ehr.Record) {
	return a.recordBase, ehr.Record{PatientID: patientID(a.Patient), Date: firstDate(a.RecordedDate, a.OnsetDateTime),
		Status: firstCoding(a.ClinicalStatus).Code, Code: firstCoding(a.Code), Text: recordText(a.Code)}
}

func fromImmunization(i immunizationResource) (recordBase, ehr.Record) {
	return i.recordBase, ehr.Record{PatientID: patientID(i.Patient), Date: i.OccurrenceDateTime, Status: i.Status,
		Code: firstCoding(i.VaccineCode), Text: recordText(i.VaccineCode)}
}

func fromProcedure(p procedureResource) (recordBase, ehr.Record) {
	return p.recordBase, ehr.Record{PatientID: patientID(p.Subject),
		Date:   firstDate(p.PerformedDateTime, p.PerformedPeriod.Start),
		Status: p.Status, Code: firstCoding(p.Code), Text: recordText(p.Code)}
}

func fromDocumentReference(d documentReferenceResource) (recordBase, ehr.Record) {
	out := ehr.Record{PatientID: patientID(d.Subject), Date: firstDate(d.Date, d.Context.Period.Start),
		Status: d.Status, Code: firstCoding(d.Type), Text: recordText(d.Type)}
	if len(d.Content) > 0 {
		a := d.Content[0].Attachment
		out.Attachment = &ehr.Attachment{ContentType: strings.TrimSpace(a.ContentType),
			Title: strings.TrimSpace(a.Title), Size: attachmentSize(a.Size)}
	}
	return d.recordBase, out
}

func fromDiagnosticReport(d diagnosticReportResource) (recordBase, ehr.Record) {
	return d.recordBase, ehr.Record{PatientID: patientID(d.Subject),
		Date:   firstDate(d.EffectiveDateTime, d.EffectivePeriod.Start, d.Issued),
		Status: d.Status, Code: firstCoding(d.Code), Text: recordText(d.Code)}
}

// convertRecord decodes raw as a T and lets conv pick the type's elements;
// it fills in what every type shares (type, id, last update) and tidies
// the strings.
func convertRecord[T any](t ehr.ClinicalType, raw json.RawMessage, conv func(T) (recordBase, ehr.Record)) (ehr.Record, error) {
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return ehr.Record{}, &decodeError{fmt.Sprintf("it is not a valid %s", t), err}
	}
	base, r := conv(v)
	r.Type = t
	r.ID = strings.TrimSpace(base.ID)
	if r.ID == "" {
		return ehr.Record{}, &decodeError{fmt.Sprintf("%s without an id", article(string(t))), nil}
	}
	r.Date = strings.TrimSpace(r.Date)
	r.Status = strings.TrimSpace(r.Status)
	r.Text = strings.TrimSpace(r.Text)
	r.LastUpdated = ehr.NormalTime(base.Meta.LastUpdated)
	return r, nil
}

// firstDate is the first of the candidate dates (in the contract's order)
// that is written, as written.
func firstDate(dates ...string) string {
	for _, d := range dates {
		if d = strings.TrimSpace(d); d != "" {
			return d
		}
	}
	return ""
}

// firstCoding is the concept's first coding (the contract's code), zero
// when it has none.
func firstCoding(cc codeableConcept) ehr.Coding {
	if len(cc.Coding) == 0 {
		return ehr.Coding{}
	}
	c := cc.Coding[0]
	return ehr.Coding{System: strings.TrimSpace(c.System), Code: strings.TrimSpace(c.Code),
		Display: strings.TrimSpace(c.Display)}
}

// recordText is the concept's text, else its first coding's display.
func recordText(cc codeableConcept) string {
	if t := strings.TrimSpace(cc.Text); t != "" {
		return t
	}
	return firstCoding(cc).Display
}

// observationValue is an Observation's value: valueQuantity (its decimal
// as written, its unit else its UCUM code), else valueString, else the
// text (else first coding's display) of valueCodeableConcept — the
// contract's "else a string" read as the value a clinician would see.
// Other value[x] kinds (boolean, integer, range, ratio, …) and an
// Observation without value (a panel with components) give nil. A
// quantity without a decimal counts as no quantity.
func observationValue(o observationResource) *ehr.RecordValue {
	if q := o.ValueQuantity; q != nil && q.Value != "" {
		unit := strings.TrimSpace(q.Unit)
		if unit == "" {
			unit = strings.TrimSpace(q.Code)
		}
		return &ehr.RecordValue{Quantity: &ehr.Quantity{Value: q.Value.String(), Unit: unit}}
	}
	if o.ValueString != nil {
		return &ehr.RecordValue{String: *o.ValueString}
	}
	if o.ValueCodeableConcept != nil {
		if s := recordText(*o.ValueCodeableConcept); s != "" {
			return &ehr.RecordValue{String: s}
		}
	}
	return nil
}

// attachmentSize is an attachment's size in bytes, nil when unsaid or not
// a whole number of bytes.
func attachmentSize(n json.Number) *int64 {
	if n == "" {
		return nil
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil || v < 0 {
		return nil
	}
	return &v
}

// patientID is the id in a reference to a Patient ("Patient/123", also an
// absolute URL or one with a _history suffix); "" for any other reference
// (a contained "#p1", a urn:uuid:, a Group): the caller knows whose records
// it asked for.
func patientID(ref reference) string {
	s := strings.TrimSpace(ref.Reference)
	if i := strings.Index(s, "/_history/"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, "/")
	if n := len(parts); n >= 2 && parts[n-2] == "Patient" && parts[n-1] != "" {
		return parts[n-1]
	}
	return ""
}

// recordDateParam is the US Core date search parameter of type t and
// whether it covers exactly the contract's clinical date of t — only then
// may the search send it (param=ge<from>&param=le<to>); the range is
// applied again to what comes back in every case, so a server that
// ignores the parameter cannot widen the answer.
//
// Period-valued targets (Encounter.period, Procedure.performedPeriod, an
// effectivePeriod) match ge/le when the period overlaps the range's side
// (FHIR search on ranges), so a record whose period.start lies in the
// range is always matched: covering. Whoever sends the parameter should
// widen it by a day each side (ge<from−1d>, le<to+1d>): the contract
// compares the calendar day as written, while a server compares instants
// in its own zone, so a dateTime written late in the evening at −05:00
// may fall on the next day on the server.
//
//   - Encounter `date` → Encounter.period; the date is period.start:
//     covers.
//   - Condition `onset-date` → onset[x] (dateTime, Period); the date falls
//     back to recordedDate, which it does not search (a Condition dated
//     only by recordedDate would be lost): does not cover.
//   - Observation `date` → effective[x]; the date falls back to issued,
//     not searched: does not cover.
//   - MedicationRequest `authoredon` → authoredOn, the date itself: covers.
//   - AllergyIntolerance: US Core defines no date parameter (base R4
//     `date` is recordedDate only, missing the onsetDateTime fallback):
//     none.
//   - Immunization `date` → occurrence[x]; the date is occurrenceDateTime
//     (an occurrenceString record is undated, so a range leaves it out
//     anyway): covers.
//   - Procedure `date` → performed[x]; the date is performedDateTime or
//     performedPeriod.start: covers.
//   - DocumentReference `date` → DocumentReference.date; the date falls
//     back to context.period.start (US Core's `period`), not searched:
//     does not cover.
//   - DiagnosticReport `date` → effective[x]; the date falls back to
//     issued, not searched: does not cover.
func recordDateParam(t ehr.ClinicalType) (param string, covers bool) {
	switch t {
	case ehr.TypeEncounter, ehr.TypeImmunization, ehr.TypeProcedure:
		return "date", true
	case ehr.TypeMedicationRequest:
		return "authoredon", true
	case ehr.TypeCondition:
		return "onset-date", false
	case ehr.TypeObservation, ehr.TypeDocumentReference, ehr.TypeDiagnosticReport:
		return "date", false
	}
	return "", false // AllergyIntolerance, and any other type
}
