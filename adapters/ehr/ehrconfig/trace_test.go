package ehrconfig

import (
	"strings"
	"testing"
)

func TestParse_PropagateTraceIsOffUnlessSet(t *testing.T) {
	cfg, err := Parse(testAdapters, []byte(`
ehr_systems:
  - {name: a, adapter: fhir, base_url: 'https://a.example/fhir'}
  - {name: b, adapter: fhir, base_url: 'https://b.example/fhir', propagate_trace: true}
  - {name: c, adapter: fhir, base_url: 'https://c.example/fhir', propagate_trace: false}
`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{false, true, false} {
		if got := cfg.Systems[i].PropagateTrace; got != want {
			t.Errorf("system %s: PropagateTrace = %v, want %v", cfg.Systems[i].Name, got, want)
		}
	}
}

func TestParse_PropagateTraceRefusedForTheBot(t *testing.T) {
	_, err := Parse(testAdapters, []byte(`
ehr_systems:
  - {name: bot, adapter: wsbot, base_url: 'wss://b.example/bot', propagate_trace: true}
`), nil, nil)
	const want = "ehr_systems[0] bot: propagate_trace: is only for adapter fhir (the bot protocol carries no trace context)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want propagate_trace refused for wsbot", err)
	}
}
