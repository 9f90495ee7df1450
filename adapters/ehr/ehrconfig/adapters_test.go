package ehrconfig

// testAdapters are the rules of the adapter kinds fhir and wsbot as they
// register them (fhir.Kind, wsbot.Kind), which ehrconfig cannot import: its
// tests read the file as the service does.
var testAdapters = []AdapterRules{
	{
		Name: "fhir", Scheme: "https", LoopbackScheme: "http", DefaultSearchEndpoint: "/Patient",
		ValidSearchEndpoint: ValidPath, SearchEndpointRule: "a path beginning with '/', without spaces, '?' or '#'",
	},
	{
		Name: "wsbot", Scheme: "wss", LoopbackScheme: "ws", DefaultSearchEndpoint: "patients.search",
		ValidSearchEndpoint: ValidAction, SearchEndpointRule: "an action name of letters, digits, '.', '_' or '-'",
		NoPropagateTrace: "is only for adapter fhir (the bot protocol carries no trace context)",
	},
}
