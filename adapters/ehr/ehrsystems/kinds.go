package ehrsystems

import (
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
)

// Kinds are the adapter kinds an EHR systems file may name, in the order
// its errors list them ("fhir or wsbot"). app registers them, one line
// each.
type Kinds struct{ list []ehrkind.Kind }

// NewKinds registers kinds, in that order.
func NewKinds(kinds ...ehrkind.Kind) Kinds { return Kinds{list: kinds} }

// Rules are the kinds' rules in the EHR systems file.
func (k Kinds) Rules() []ehrconfig.AdapterRules {
	out := make([]ehrconfig.AdapterRules, len(k.list))
	for i, kind := range k.list {
		out[i] = kind.Rules
	}
	return out
}

// Parse decodes and validates an EHR systems file whose systems name
// these kinds (ehrconfig.Parse).
func (k Kinds) Parse(data, credentialsKey []byte, getenv func(string) string) (*ehrconfig.Config, error) {
	return ehrconfig.Parse(k.Rules(), data, credentialsKey, getenv)
}

// Load reads and parses the EHR systems file at path (ehrconfig.Load).
func (k Kinds) Load(path string, credentialsKey []byte, getenv func(string) string) (*ehrconfig.Config, error) {
	return ehrconfig.Load(k.Rules(), path, credentialsKey, getenv)
}

// kind returns the kind called name.
func (k Kinds) kind(name ehrconfig.Adapter) (ehrkind.Kind, bool) {
	for _, kind := range k.list {
		if kind.Rules.Name == name {
			return kind, true
		}
	}
	return ehrkind.Kind{}, false
}
