package fhir_test

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The search parameters fakeFHIR knows, by type, and their helpers.

type matcher func(res map[string]any, value string) bool

var searchParams = map[string]map[string]matcher{
	"Practitioner": {
		"_id":        func(res map[string]any, v string) bool { return res["id"] == v },
		"active:not": func(res map[string]any, v string) bool { return fmt.Sprint(res["active"]) != v },
		"name": func(res map[string]any, v string) bool {
			for _, n := range list(res["name"]) {
				n := n.(map[string]any)
				words := strings.Fields(fmt.Sprint(n["text"]))
				words = append(words, fmt.Sprint(n["family"]))
				for _, g := range list(n["given"]) {
					words = append(words, g.(string))
				}
				for _, w := range words {
					if strings.HasPrefix(strings.ToLower(w), strings.ToLower(v)) {
						return true
					}
				}
			}
			return false
		},
	},
	"PractitionerRole": {
		"practitioner": func(res map[string]any, v string) bool { return ref(res, "practitioner") == v },
	},
	"Schedule": {
		"actor": func(res map[string]any, v string) bool { return slices.Contains(refs(res["actor"]), v) },
	},
	"Slot": {
		"schedule": func(res map[string]any, v string) bool { return ref(res, "schedule") == v },
		"status":   func(res map[string]any, v string) bool { return res["status"] == v },
		"start":    func(res map[string]any, v string) bool { return compareDate(res["start"], v) },
	},
	// The clinical types: patient, and the US Core date parameters that
	// cover the contract's clinical date (no others: a strict server
	// answers 400 to one it does not know).
	"Encounter": {
		"patient": ofPatient,
		"date":    func(res map[string]any, v string) bool { return compareDate(field(res, "period", "start"), v) },
	},
	"Condition":   {"patient": ofPatient},
	"Observation": {"patient": ofPatient},
	"MedicationRequest": {
		"patient":    ofPatient,
		"authoredon": func(res map[string]any, v string) bool { return compareDate(res["authoredOn"], v) },
	},
	"AllergyIntolerance": {"patient": ofPatient},
	"Immunization": {
		"patient": ofPatient,
		"date":    func(res map[string]any, v string) bool { return compareDate(res["occurrenceDateTime"], v) },
	},
	"Procedure": {
		"patient": ofPatient,
		"date": func(res map[string]any, v string) bool {
			return compareDate(res["performedDateTime"], v) || compareDate(field(res, "performedPeriod", "start"), v)
		},
	},
	"DocumentReference": {"patient": ofPatient},
	"DiagnosticReport":  {"patient": ofPatient},
	"Appointment": {
		"_id": func(res map[string]any, v string) bool { return res["id"] == v },
		"actor": func(res map[string]any, v string) bool {
			for _, p := range list(res["participant"]) {
				if ref(p.(map[string]any), "actor") == v {
					return true
				}
			}
			return false
		},
		"status": func(res map[string]any, v string) bool { return res["status"] == v },
		"date":   func(res map[string]any, v string) bool { return compareDate(res["start"], v) },
		"identifier": func(res map[string]any, v string) bool {
			sys, val, _ := strings.Cut(v, "|")
			for _, id := range list(res["identifier"]) {
				id := id.(map[string]any)
				if id["system"] == sys && id["value"] == val {
					return true
				}
			}
			return false
		},
	},
}

// lastUpdated is res's meta.lastUpdated, a fixed-width UTC instant here
// (tick), so that its text sorts as its time.
func lastUpdated(res map[string]any) string {
	s, _ := field(res, "meta", "lastUpdated").(string)
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	return s
}

// ofPatient matches a clinical resource whose subject (or patient) is the
// Patient v (an id, or Patient/id).
func ofPatient(res map[string]any, v string) bool {
	if !strings.HasPrefix(v, "Patient/") {
		v = "Patient/" + v
	}
	return ref(res, "subject") == v || ref(res, "patient") == v
}

// field is res[key][sub], nil when absent.
func field(res map[string]any, key, sub string) any {
	m, _ := res[key].(map[string]any)
	return m[sub]
}

func list(v any) []any {
	l, _ := v.([]any)
	return l
}

func ref(res map[string]any, key string) string {
	m, _ := res[key].(map[string]any)
	s, _ := m["reference"].(string)
	return s
}

func refs(v any) []string {
	var out []string
	for _, r := range list(v) {
		if m, ok := r.(map[string]any); ok {
			s, _ := m["reference"].(string)
			out = append(out, s)
		}
	}
	return out
}

// compareDate applies a prefixed date search value (ge, gt, le, lt, eq) to
// an instant (a date, or a date value, is its midnight UTC).
func compareDate(field any, v string) bool {
	s, _ := field.(string)
	at, err := parseInstant(s)
	if err != nil {
		return false
	}
	prefix := "eq"
	if len(v) > 2 && v[0] >= 'a' && v[0] <= 'z' {
		prefix, v = v[:2], v[2:]
	}
	bound, err := parseInstant(v)
	if err != nil {
		return false
	}
	if len(v) == len(time.DateOnly) {
		// A day stands for all of it: le2024-07-01 keeps the evening of
		// July 1, gt2024-07-01 starts on July 2.
		next := bound.AddDate(0, 0, 1)
		switch prefix {
		case "gt":
			return !at.Before(next)
		case "le":
			return at.Before(next)
		case "eq":
			return !at.Before(bound) && at.Before(next)
		}
	}
	switch prefix {
	case "ge":
		return !at.Before(bound)
	case "gt":
		return at.After(bound)
	case "le":
		return !at.After(bound)
	case "lt":
		return at.Before(bound)
	default:
		return at.Equal(bound)
	}
}

func parseInstant(s string) (time.Time, error) {
	if len(s) == len(time.DateOnly) {
		return time.Parse(time.DateOnly, s)
	}
	return time.Parse(time.RFC3339Nano, s)
}
