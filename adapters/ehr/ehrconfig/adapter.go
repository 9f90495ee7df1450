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
	// SearchEndpoint is the form of a search_endpoint that is written
	// (PathEndpoint, ActionEndpoint).
	SearchEndpoint EndpointRule
	// PropagateTrace tells that propagate_trace may be true for the kind's
	// systems; for another kind it is refused, naming the kinds that allow
	// it and NoTraceReason, why this one does not ("": none given).
	PropagateTrace bool
	NoTraceReason  string
}

// EndpointRule is a form of search_endpoint: Valid checks one that is
// written, and Rule says what one must be when it fails.
type EndpointRule struct {
	Valid func(string) bool
	Rule  string
}

var (
	// PathEndpoint is the search_endpoint of an HTTP API (fhir).
	PathEndpoint = EndpointRule{Valid: validPath, Rule: "a path beginning with '/', without spaces, '?' or '#'"}
	// ActionEndpoint is the search_endpoint of a bot (wsbot).
	ActionEndpoint = EndpointRule{Valid: validName, Rule: "an action name of letters, digits, '.', '_' or '-'"}
)

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
	return v.names(func(AdapterRules) bool { return true })
}

// traced lists the names of the kinds that allow propagate_trace.
func (v *validator) traced() string {
	return v.names(func(k AdapterRules) bool { return k.PropagateTrace })
}

// names lists the names of the kinds that match, in their order: "fhir,
// wsbot or hl7".
func (v *validator) names(match func(AdapterRules) bool) string {
	var names []string
	for _, k := range v.adapters {
		if match(k) {
			names = append(names, string(k.Name))
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// noTrace is why a system of kind k cannot propagate_trace: "is only for
// adapter fhir (the bot protocol carries no trace context)".
func (v *validator) noTrace(k AdapterRules) string {
	msg := "is for no adapter"
	if traced := v.traced(); traced != "" {
		msg = "is only for adapter " + traced
	}
	if k.NoTraceReason != "" {
		msg += " (" + k.NoTraceReason + ")"
	}
	return msg
}
