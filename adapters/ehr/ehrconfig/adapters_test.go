package ehrconfig

import (
	"slices"
	"testing"
)

// testAdapters are the rules of the adapter kinds fhir and wsbot as they
// register them (fhir.Kind, wsbot.Kind), which ehrconfig cannot import: its
// tests read the file as the service does.
var testAdapters = []AdapterRules{
	{
		Name: "fhir", Scheme: "https", LoopbackScheme: "http", DefaultSearchEndpoint: "/Patient",
		SearchEndpoint: PathEndpoint,
		PropagateTrace: true,
	},
	{
		Name: "wsbot", Scheme: "wss", LoopbackScheme: "ws", DefaultSearchEndpoint: "patients.search",
		SearchEndpoint: ActionEndpoint,
		NoTraceReason:  "the bot protocol carries no trace context",
	},
}

// The file knows the kinds it is given and no other, and names them in
// their order when a system names none of them; each kind's rules apply to
// its systems only.
func TestParse_KnowsTheAdapterKindsItIsGiven(t *testing.T) {
	third := AdapterRules{Name: "hl7", Scheme: "https", LoopbackScheme: "http", DefaultSearchEndpoint: "/hl7",
		SearchEndpoint: EndpointRule{Valid: validPath, Rule: "a path"}}
	file := func(adapter string) []byte {
		return []byte("ehr_systems:\n  - {name: a, adapter: " + adapter + ", base_url: 'https://a.example/'}\n")
	}
	for _, tt := range []struct {
		kinds []AdapterRules
		want  string
	}{
		{testAdapters[:1], "ehr_systems[0] a: adapter: must be fhir"},
		{testAdapters, "ehr_systems[0] a: adapter: must be fhir or wsbot"},
		{append(slices.Clone(testAdapters), third), "ehr_systems[0] a: adapter: must be fhir, wsbot or hl7"},
	} {
		if _, err := Parse(tt.kinds, file("smoke"), nil, nil); err == nil || err.Error() != tt.want {
			t.Errorf("err = %v, want %s", err, tt.want)
		}
	}
	cfg, err := Parse(append(slices.Clone(testAdapters), third), file("hl7"), nil, nil)
	if err != nil || cfg.Systems[0].SearchEndpoint != "/hl7" {
		t.Fatalf("an hl7 system: %v, %+v", err, cfg)
	}
	if _, err := Parse(testAdapters, file("hl7"), nil, nil); err == nil {
		t.Error("a kind not given was accepted")
	}
}
