package wsbot

import (
	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
	"github.com/carebridge/carebridge/adapters/ehr/ehrkind"
)

// Kind registers the adapter kind wsbot (the WebSocket bot protocol): a
// base_url of wss (ws on a loopback host), a search_endpoint that is an
// action name, no trace context (the protocol has no place for it); its
// systems keep a link, search patients and records, schedule and tell
// their appointment changes.
func Kind() ehrkind.Kind {
	return ehrkind.Kind{
		Rules: ehrconfig.AdapterRules{
			Name: "wsbot", Scheme: "wss", LoopbackScheme: "ws",
			DefaultSearchEndpoint: DefaultSearchAction,
			SearchEndpoint:        ehrconfig.ActionEndpoint,
			NoTraceReason:         "the bot protocol carries no trace context",
		},
		Link: true,
		New:  newSystem,
	}
}

// newSystem builds the bot client of one wsbot system; its HTTP client
// gives the handshake's credentials.
func newSystem(d ehrkind.Deps, s ehrconfig.System) (ehrkind.Adapted, error) {
	client, err := d.HTTPClient(s)
	if err != nil {
		return ehrkind.Adapted{}, err
	}
	bot, err := New(Config{
		Name: s.Name, URL: s.BaseURL, SearchAction: s.SearchEndpoint, CallTimeout: s.Timeout,
		Header: client.AuthHeader, Logger: d.Log.With("component", "wsbot", "ehr", s.Name),
		Metrics: d.Metrics, Tracer: d.Tracer,
	})
	if err != nil {
		return ehrkind.Adapted{}, err
	}
	return ehrkind.Adapted{Patients: bot, Records: bot, Scheduler: bot, Changes: bot, Link: bot}, nil
}
