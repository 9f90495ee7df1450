package fhir

import (
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
)

// Kind registers the adapter kind fhir (REST, FHIR R4): a base_url of
// https (http on a loopback host), a search_endpoint that is a path, trace
// context allowed; its systems search patients and records, schedule and
// tell their appointment changes.
func Kind() ehrkind.Kind {
	return ehrkind.Kind{
		Rules: ehrconfig.AdapterRules{
			Name: "fhir", Scheme: "https", LoopbackScheme: "http",
			DefaultSearchEndpoint: DefaultSearchEndpoint,
			SearchEndpoint:        ehrconfig.PathEndpoint,
			PropagateTrace:        true,
		},
		New: newSystem,
	}
}

// newSystem builds the clients of one fhir system over its HTTP client.
func newSystem(d ehrkind.Deps, s ehrconfig.System) (ehrkind.Adapted, error) {
	client, err := d.HTTPClient(s)
	if err != nil {
		return ehrkind.Adapted{}, err
	}
	c := New(client, s.SearchEndpoint)
	sch := NewScheduler(client, WithLogger(d.Log.With("component", "fhir", "ehr", s.Name)))
	return ehrkind.Adapted{Patients: c, Records: c, Scheduler: sch, Changes: sch}, nil
}
