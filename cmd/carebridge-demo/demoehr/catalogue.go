package demoehr

import "github.com/carebridge/carebridge/core/ehr"

// The codes the demo's clinical records are made of: real terminology
// codes (LOINC, SNOMED CT, RxNorm, CVX) of common primary-care findings,
// with synthetic values. Nothing here describes a real person.

// The code systems (FHIR canonical URIs).
const (
	loinc  = "http://loinc.org"
	snomed = "http://snomed.info/sct"
	rxnorm = "http://www.nlm.nih.gov/research/umls/rxnorm"
	cvx    = "http://hl7.org/fhir/sid/cvx"
	ucum   = "http://unitsofmeasure.org"
)

// entry is one code a record may carry. For an Observation, unit, low,
// high and decimals give its synthetic quantity (UCUM unit), or answer its
// coded value; category is the Observation's or AllergyIntolerance's
// category.
type entry struct {
	ehr.Coding
	category  string
	unit      string
	low, high float64
	decimals  int
	answer    *ehr.Coding
}

func code(system, c, display string) ehr.Coding {
	return ehr.Coding{System: system, Code: c, Display: display}
}

// lab and vital are Observations with a quantity.
func lab(c, display, unit string, low, high float64, decimals int) entry {
	return entry{Coding: code(loinc, c, display), category: "laboratory", unit: unit, low: low, high: high, decimals: decimals}
}

func vital(c, display, unit string, low, high float64, decimals int) entry {
	return entry{Coding: code(loinc, c, display), category: "vital-signs", unit: unit, low: low, high: high, decimals: decimals}
}

// catalogue lists each type's codes; a person's records of a type take
// distinct codes from it, so each list is at least as long as the most
// records of its type a person has (recordCount).
var catalogue = map[ehr.ClinicalType][]entry{
	ehr.TypeEncounter: {
		{Coding: code(snomed, "185349003", "Encounter for check up")},
		{Coding: code(snomed, "390906007", "Follow-up encounter")},
		{Coding: code(snomed, "185345009", "Encounter for symptom")},
		{Coding: code(snomed, "439740005", "Postoperative follow-up visit")},
		{Coding: code(snomed, "698314001", "Consultation for treatment")},
	},
	ehr.TypeCondition: {
		{Coding: code(snomed, "44054006", "Diabetes mellitus type 2")},
		{Coding: code(snomed, "38341003", "Hypertensive disorder")},
		{Coding: code(snomed, "55822004", "Hyperlipidemia")},
		{Coding: code(snomed, "195967001", "Asthma")},
		{Coding: code(snomed, "40055000", "Chronic sinusitis")},
	},
	ehr.TypeObservation: {
		lab("2345-7", "Glucose [Mass/volume] in Serum or Plasma", "mg/dL", 78, 160, 0),
		lab("4548-4", "Hemoglobin A1c/Hemoglobin.total in Blood", "%", 5.1, 8.4, 1),
		lab("2093-3", "Cholesterol [Mass/volume] in Serum or Plasma", "mg/dL", 150, 260, 0),
		lab("2160-0", "Creatinine [Mass/volume] in Serum or Plasma", "mg/dL", 0.6, 1.4, 2),
		lab("718-7", "Hemoglobin [Mass/volume] in Blood", "g/dL", 11.5, 16.5, 1),
		vital("8867-4", "Heart rate", "/min", 56, 98, 0),
		vital("29463-7", "Body weight", "kg", 52, 104, 1),
		vital("8310-5", "Body temperature", "Cel", 36.2, 37.6, 1),
		{Coding: code(loinc, "72166-2", "Tobacco smoking status"), category: "social-history",
			answer: &ehr.Coding{System: snomed, Code: "266919005", Display: "Never smoked tobacco"}},
	},
	ehr.TypeMedicationRequest: {
		{Coding: code(rxnorm, "860975", "24 HR metformin hydrochloride 500 MG Extended Release Oral Tablet")},
		{Coding: code(rxnorm, "314076", "lisinopril 10 MG Oral Tablet")},
		{Coding: code(rxnorm, "259255", "atorvastatin 80 MG Oral Tablet")},
		{Coding: code(rxnorm, "308182", "amoxicillin 250 MG Oral Capsule")},
		{Coding: code(rxnorm, "313782", "acetaminophen 325 MG Oral Tablet")},
	},
	ehr.TypeAllergyIntolerance: {
		{Coding: code(snomed, "373270004", "Penicillin -class of antibiotic- (substance)"), category: "medication"},
		{Coding: code(snomed, "256349002", "Peanut - dietary (substance)"), category: "food"},
		{Coding: code(snomed, "256277009", "Grass pollen (substance)"), category: "environment"},
		{Coding: code(snomed, "264287008", "Animal dander (substance)"), category: "environment"},
		{Coding: code(snomed, "111088007", "Latex (substance)"), category: "environment"},
	},
	ehr.TypeImmunization: {
		{Coding: code(cvx, "150", "Influenza, injectable, quadrivalent, preservative free")},
		{Coding: code(cvx, "208", "COVID-19, mRNA, LNP-S, PF, 30 mcg/0.3 mL dose")},
		{Coding: code(cvx, "115", "Tdap")},
		{Coding: code(cvx, "187", "Zoster vaccine recombinant")},
		{Coding: code(cvx, "33", "Pneumococcal polysaccharide PPV23")},
	},
	ehr.TypeProcedure: {
		{Coding: code(snomed, "430193006", "Medication reconciliation (procedure)")},
		{Coding: code(snomed, "171207006", "Depression screening (procedure)")},
		{Coding: code(snomed, "117015009", "Throat culture (procedure)")},
		{Coding: code(snomed, "73761001", "Colonoscopy (procedure)")},
		{Coding: code(snomed, "268556000", "Urine screening for protein (procedure)")},
	},
	ehr.TypeDocumentReference: {
		{Coding: code(loinc, "11506-3", "Progress note")},
		{Coding: code(loinc, "34117-2", "History and physical note")},
		{Coding: code(loinc, "11488-4", "Consult note")},
		{Coding: code(loinc, "18842-5", "Discharge summary")},
		{Coding: code(loinc, "34133-9", "Summary of episode note")},
	},
	ehr.TypeDiagnosticReport: {
		{Coding: code(loinc, "58410-2", "CBC panel - Blood by Automated count")},
		{Coding: code(loinc, "24323-8", "Comprehensive metabolic 2000 panel - Serum or Plasma")},
		{Coding: code(loinc, "57698-3", "Lipid panel with direct LDL - Serum or Plasma")},
		{Coding: code(loinc, "51990-0", "Basic metabolic panel - Blood")},
		{Coding: code(loinc, "24357-6", "Urinalysis macro (dipstick) panel - Urine")},
	},
}
