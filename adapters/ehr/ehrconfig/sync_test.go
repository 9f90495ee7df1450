package ehrconfig

import (
	"strings"
	"testing"
	"time"
)

// syncFile is three systems — clinic-a (integration.ehr), bot-b (the
// integration EHR of bizB) and other (neither) — with the given sync
// sections (YAML flow mappings, "" for none).
func syncFile(syncA, syncB, syncOther string) []byte {
	sync := func(s string) string {
		if s == "" {
			return ""
		}
		return ", sync: " + s
	}
	return []byte(`
ehr_systems:
  - {name: clinic-a, adapter: fhir, base_url: 'https://a.example/fhir'` + sync(syncA) + `}
  - {name: bot-b, adapter: wsbot, base_url: 'wss://b.example/bot', businesses: [` + bizB + `]` + sync(syncB) + `}
  - {name: other, adapter: fhir, base_url: 'https://o.example/fhir'` + sync(syncOther) + `}
integration:
  ehr: clinic-a
  by_business: {` + bizB + `: bot-b}
`)
}

func TestParse_SyncIntervalDefaultsAndOverrides(t *testing.T) {
	tests := []struct {
		name                string
		syncA, syncB, syncO string
		wantA, wantB, wantO time.Duration
	}{
		{"defaults: integration EHRs on, others off", "", "", "", DefaultSyncInterval, DefaultSyncInterval, 0},
		{"an empty sync section is the default", "{}", "{}", "{}", DefaultSyncInterval, DefaultSyncInterval, 0},
		{"0s turns an integration EHR off", "{interval: 0s}", "{interval: 0s}", "", 0, 0, 0},
		{"set on a system that is no integration EHR", "", "", "{interval: 2m}", DefaultSyncInterval, DefaultSyncInterval, 2 * time.Minute},
		{"Go durations", "{interval: 1m30s}", "{interval: 1.5s}", "{interval: 24h}", 90 * time.Second, 1500 * time.Millisecond, 24 * time.Hour},
		{"the lower bound", "{interval: 1s}", "{interval: 1000ms}", "", time.Second, time.Second, 0},
		{"spaces around the value", "{interval: ' 5s '}", "", "", 5 * time.Second, DefaultSyncInterval, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(testAdapters, syncFile(tt.syncA, tt.syncB, tt.syncO), nil, nil)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			for name, want := range map[string]time.Duration{"clinic-a": tt.wantA, "bot-b": tt.wantB, "other": tt.wantO} {
				if got := cfg.SyncInterval(name); got != want {
					t.Errorf("SyncInterval(%s) = %v; want %v", name, got, want)
				}
				if s, _ := cfg.System(name); s.SyncInterval != want {
					t.Errorf("System(%s).SyncInterval = %v; want %v", name, s.SyncInterval, want)
				}
			}
		})
	}
}

func TestConfig_SyncIntervalOfAnUnknownSystemIsOff(t *testing.T) {
	cfg := mustParse(t, syncFile("", "", ""))
	if got := cfg.SyncInterval("nope"); got != 0 {
		t.Errorf("SyncInterval(nope) = %v; want 0", got)
	}
}

func TestParse_SyncIntervalWithoutIntegrationIsOff(t *testing.T) {
	cfg := mustParse(t, systemsFile(t, validSystem()))
	if got := cfg.SyncInterval("clinic-a"); got != 0 {
		t.Errorf("SyncInterval of a system that is no integration EHR = %v; want 0 (off)", got)
	}
}

func TestParse_SyncIntervalRefusesBadValues(t *testing.T) {
	const at = "ehr_systems[0] clinic-a: sync.interval: "
	tests := []struct {
		name, sync, want string
	}{
		{"a number without unit", "{interval: 60}", at + `"60" is not a duration; write one such as 60s or 2m (0s turns sync off)`},
		{"words", "{interval: every minute}", at + `"every minute" is not a duration`},
		{"empty", "{interval: ''}", at + "is empty; write a duration such as 60s or 2m"},
		{"negative", "{interval: -5s}", at + "must not be negative (0s turns sync off)"},
		{"below a second", "{interval: 500ms}", at + "must be at least 1s (or 0s to turn sync off)"},
		{"above a day", "{interval: 25h}", at + "must be at most 24h0m0s"},
		{"an unknown key", "{every: 60s}", "field every not found"},
		{"not a mapping", "60s", "EHR systems file"},
		{"a list", "{interval: [60s]}", "EHR systems file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(testAdapters, syncFile(tt.sync, "", ""), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v\nwant it to contain %q", err, tt.want)
			}
			if cfg != nil {
				t.Error("a config returned with an error")
			}
		})
	}
}

// Every bad interval is reported at once, each naming its system.
func TestParse_SyncIntervalErrorsNameEachSystem(t *testing.T) {
	_, err := Parse(testAdapters, syncFile("{interval: 0.5s}", "{interval: -1m}", "{interval: 48h}"), nil, nil)
	for _, want := range []string{
		"ehr_systems[0] clinic-a: sync.interval: must be at least",
		"ehr_systems[1] bot-b: sync.interval: must not be negative",
		"ehr_systems[2] other: sync.interval: must be at most",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to contain %q", err, want)
		}
	}
}
