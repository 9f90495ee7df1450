// Package ehrkinds lists, once, the adapter kinds of EHR systems the
// service knows: the service (app), its command (cmd/carebridge) and the
// demo (cmd/carebridge-demo) read EHR systems files with them.
package ehrkinds

import (
	"github.com/carebridge/carebridge/adapters/ehr/ehrsystems"
	"github.com/carebridge/carebridge/adapters/ehr/fhir"
	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
)

// All are the adapter kinds an EHR systems file may name, in the order its
// errors list them: a new kind is one more line here.
func All() ehrsystems.Kinds {
	return ehrsystems.NewKinds(
		fhir.Kind(),
		wsbot.Kind(),
	)
}
