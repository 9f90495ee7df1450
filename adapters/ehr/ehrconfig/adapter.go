package ehrconfig

import "strings"

// AdapterRules are what the EHR systems file knows of an adapter kind: the
// name its systems give in adapter, and the rules of their fields that
// depend on it. The kinds are given to Parse (each registers its rules
// beside its adapter), so a new kind changes nothing here.
type AdapterRules struct {
	Name Adapter
	// Scheme is the scheme of base_url ("https"), and LoopbackScheme the
	// plaintext one allowed on a loopback host only ("http").
	Scheme, LoopbackScheme string
	// DefaultSearchEndpoint is the search_endpoint of a system that sets
	// none.
	DefaultSearchEndpoint string
	// ValidSearchEndpoint checks a search_endpoint that is written, and
	// SearchEndpointRule says what one must be when it fails ("a path
	// beginning with '/', …").
	ValidSearchEndpoint func(string) bool
	SearchEndpointRule  string
	// NoPropagateTrace is why propagate_trace cannot be true for the kind
	// ("": it can).
	NoPropagateTrace string
}

// adapter returns the rules of the kind called name.
func (v *validator) adapter(name Adapter) (AdapterRules, bool) {
	for _, k := range v.adapters {
		if k.Name == name {
			return k, true
		}
	}
	return AdapterRules{}, false
}

// known lists the kinds' names in their order: "fhir or wsbot".
func (v *validator) known() string {
	names := make([]string, len(v.adapters))
	for i, k := range v.adapters {
		names[i] = string(k.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
