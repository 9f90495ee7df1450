package demoehr

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// mergeKey is what makes two systems' records one item: the type, the
// code and the calendar day as written.
func mergeKey(r ehr.Record) string {
	return string(r.Type) + "|" + r.Code.System + "|" + r.Code.Code + "|" + r.Date[:len(time.DateOnly)]
}

func keys(recs []ehr.Record) map[string]ehr.Record {
	m := map[string]ehr.Record{}
	for _, r := range recs {
		m[mergeKey(r)] = r
	}
	return m
}

func TestDemoRecords_ThePeopleInBothSystemsShareEachTypesNewestRecord(t *testing.T) {
	today := time.Date(2026, 11, 26, 1, 5, 0, 0, time.UTC)
	for i := botFrom; i < fhirPeople; i++ {
		fhir, bot := recordsOf(i, today)
		inFHIR, inBot := keys(fhir), keys(bot)
		var shared []ehr.Record
		for k, r := range inFHIR {
			if b, ok := inBot[k]; ok {
				if b.Status != r.Status || b.Text != r.Text || !reflect.DeepEqual(b.Value, r.Value) || b.Date != r.Date {
					t.Fatalf("person %d: the shared %s differs between the systems: %+v / %+v", i, k, r, b)
				}
				shared = append(shared, r)
			}
		}
		if len(shared) != len(ehr.ClinicalTypes) {
			t.Fatalf("person %d: %d records in both systems, want one of each of the %d types", i, len(shared), len(ehr.ClinicalTypes))
		}
		for _, typ := range ehr.ClinicalTypes {
			if !slices.ContainsFunc(shared, func(r ehr.Record) bool { return r.Type == typ }) {
				t.Fatalf("person %d: no %s in both systems", i, typ)
			}
			if n := countType(fhir, typ) + countType(bot, typ) - 1; n != len(typeRecords(i, slices.Index(ehr.ClinicalTypes, typ), typ, today)) {
				t.Fatalf("person %d: %d distinct %s records across the systems", i, n, typ)
			}
		}
	}
	// The person run.sh names (Demo.BothFamily) is one of them.
	if fhir, bot := holds(botFrom); !fhir || !bot {
		t.Fatal("person botFrom is not in both systems")
	}
}

func countType(recs []ehr.Record, t ehr.ClinicalType) int {
	n := 0
	for _, r := range recs {
		if r.Type == t {
			n++
		}
	}
	return n
}

func TestDemoRecords_PeopleInOneSystemHaveTheirRecordsThereOnly(t *testing.T) {
	today := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		i         int
		fhir, bot bool
	}{{0, true, false}, {botFrom - 1, true, false}, {fhirPeople, false, true}, {demoPeople - 1, false, true}} {
		fhir, bot := recordsOf(c.i, today)
		if (len(fhir) > 0) != c.fhir || (len(bot) > 0) != c.bot {
			t.Fatalf("person %d: %d FHIR records, %d bot records", c.i, len(fhir), len(bot))
		}
	}
}

// Every record is dated in the three years before today, each type has a
// few, with distinct codes; the same day gives the same records, another
// day moves them along.
func TestDemoRecords_AreDeterministicPerDayAndWithinThreeYears(t *testing.T) {
	for _, today := range []time.Time{
		time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC),
		time.Date(2028, 2, 29, 23, 59, 0, 0, time.UTC), // a leap day
		time.Date(2027, 1, 1, 0, 30, 0, 0, time.FixedZone("", 14*3600)),
	} {
		oldest := time.Date(today.Year()-recordYears, today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
		for i := range demoPeople {
			all := allRecords(i, today)
			if later := allRecords(i, today.Add(time.Duration(23-today.Hour())*time.Hour)); !reflect.DeepEqual(all, later) {
				t.Fatalf("person %d: records differ within the day %s", i, today.Format(time.DateOnly))
			}
			if next := allRecords(i, today.AddDate(0, 0, 1)); next[0].Date == all[0].Date {
				t.Fatalf("person %d: the next day's records are dated the same", i)
			}
			for _, r := range all {
				checkRecord(t, i, r, oldest, today)
			}
			for ti, typ := range ehr.ClinicalTypes {
				if n := countType(all, typ); n < 2 || n != recordCount(i, ti) || n > len(catalogue[typ]) {
					t.Fatalf("person %d: %d %s records", i, n, typ)
				}
			}
			if codes := keys(all); len(codes) != len(all) {
				t.Fatalf("person %d: %d records, %d distinct codes and days", i, len(all), len(codes))
			}
		}
	}
}

// allRecords is every record of person i, once.
func allRecords(i int, today time.Time) []ehr.Record {
	var out []ehr.Record
	for ti, typ := range ehr.ClinicalTypes {
		out = append(out, typeRecords(i, ti, typ, today)...)
	}
	return out
}

func checkRecord(t *testing.T, i int, r ehr.Record, oldest, today time.Time) {
	t.Helper()
	at, err := time.Parse(time.RFC3339, r.Date)
	day := time.Date(at.Year(), at.Month(), at.Day(), 0, 0, 0, 0, time.UTC)
	end := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	if err != nil || day.Before(oldest) || !day.Before(end) {
		t.Fatalf("person %d: %s dated %q, not in [%s, %s)", i, r.ID, r.Date, oldest.Format(time.DateOnly), end.Format(time.DateOnly))
	}
	if r.PatientID != person(i).ID || r.ID == "" || r.Status == "" || r.Text == "" || r.Code.Code == "" ||
		!slices.Contains([]string{loinc, snomed, rxnorm, cvx}, r.Code.System) {
		t.Fatalf("person %d: incomplete record %+v", i, r)
	}
	if (r.Type == ehr.TypeObservation) != (r.Value != nil) || (r.Type == ehr.TypeDocumentReference) != (r.Attachment != nil) {
		t.Fatalf("person %d: value %v, attachment %v on a %s", i, r.Value, r.Attachment, r.Type)
	}
	if q := r.Value; q != nil && q.Quantity != nil && (q.Quantity.Unit == "" || !json.Valid([]byte(q.Quantity.Value))) {
		t.Fatalf("person %d: quantity %+v", i, *q.Quantity)
	}
}

// The FHIR resources carry the record's date in the element the contract
// reads, its code as the first coding, and the patient reference.
func TestDemoRecords_FHIRResourcesCarryTheContractsElements(t *testing.T) {
	dateOf := map[ehr.ClinicalType]func(m map[string]any) any{
		ehr.TypeEncounter:          func(m map[string]any) any { return m["period"].(map[string]any)["start"] },
		ehr.TypeCondition:          func(m map[string]any) any { return firstOf(m["onsetDateTime"], m["recordedDate"]) },
		ehr.TypeObservation:        func(m map[string]any) any { return m["effectiveDateTime"] },
		ehr.TypeMedicationRequest:  func(m map[string]any) any { return m["authoredOn"] },
		ehr.TypeAllergyIntolerance: func(m map[string]any) any { return m["recordedDate"] },
		ehr.TypeImmunization:       func(m map[string]any) any { return m["occurrenceDateTime"] },
		ehr.TypeProcedure:          func(m map[string]any) any { return m["performedDateTime"] },
		ehr.TypeDocumentReference:  func(m map[string]any) any { return m["date"] },
		ehr.TypeDiagnosticReport:   func(m map[string]any) any { return m["effectiveDateTime"] },
	}
	fhir, _ := recordsOf(botFrom, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
	for _, r := range fhir {
		var m map[string]any
		raw, err := json.Marshal(fhirRecord(r, "p-1"))
		if err != nil || json.Unmarshal(raw, &m) != nil {
			t.Fatalf("%s: %v", r.ID, err)
		}
		ref := firstOf(m["subject"], m["patient"]).(map[string]any)["reference"]
		if m["resourceType"] != string(r.Type) || dateOf[r.Type](m) != r.Date || ref != "Patient/p-1" {
			t.Fatalf("%s: %s", r.ID, raw)
		}
		if r.Type == ehr.TypeCondition && r.Status == "resolved" && m["onsetDateTime"] != nil {
			t.Fatalf("a resolved condition has an onset: %s", raw)
		}
		if c := mainCoding(r.Type, m); c["system"] != r.Code.System || c["code"] != r.Code.Code {
			t.Fatalf("%s: code %v, want %+v", r.ID, c, r.Code)
		}
	}
}

func firstOf(vs ...any) any {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// mainCoding is the first coding of the type's main code in resource m.
func mainCoding(t ehr.ClinicalType, m map[string]any) map[string]any {
	cc := map[ehr.ClinicalType]any{ehr.TypeEncounter: m["type"], ehr.TypeMedicationRequest: m["medicationCodeableConcept"],
		ehr.TypeImmunization: m["vaccineCode"], ehr.TypeDocumentReference: m["type"]}[t]
	if cc == nil {
		cc = m["code"]
	}
	if list, ok := cc.([]any); ok {
		cc = list[0]
	}
	return cc.(map[string]any)["coding"].([]any)[0].(map[string]any)
}
