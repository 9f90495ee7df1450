// Package event delivers the events the cores write to the outbox
// (core.Event, core.EventType) to webhook receivers and to a message
// stream: the subscriptions, the dispatcher, the relay and their retry
// policy.
package event

import (
	"strings"

	"github.com/carebridge/carebridge/core"
)

// All is the subscription pattern that matches every type.
const All = "*"

// ErrUnknownType is a subscription naming a type the service never emits.
var ErrUnknownType = &core.Error{Kind: core.KindInvalid, Code: "unknown_event_type", Message: "Unknown event type"}

// ParseTypes reads a subscription's comma-separated list of event types,
// or "*" for all of them. Blanks around names are ignored; an empty list,
// an unknown name or "*" beside names is ErrUnknownType naming the
// problem and the known types.
func ParseTypes(s string) ([]string, error) {
	if strings.TrimSpace(s) == All {
		return []string{All}, nil
	}
	known := make([]string, len(core.EventTypes))
	for i, t := range core.EventTypes {
		known[i] = string(t)
	}
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if !isType(name) {
			if name == "" {
				return nil, ErrUnknownType.WithMessage("Event types must be a comma-separated list of %s, or '*'", strings.Join(known, ", "))
			}
			return nil, ErrUnknownType.WithMessage("Unknown event type %q: use %s, or '*'", name, strings.Join(known, ", "))
		}
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out, nil
}

func isType(name string) bool {
	for _, t := range core.EventTypes {
		if string(t) == name {
			return true
		}
	}
	return false
}
