package ehrconfig

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/carebridge/carebridge/adapters/keyring"
)

const (
	testKeyHex  = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
	otherKeyHex = "1f1e1d1c1b1a191817161514131211100f0e0d0c0b0a09080706050403020100"
	// plainSecret is the secret the tests encrypt; no error may contain it.
	plainSecret = "s3cret-Value-42"
)

func key(t testing.TB, s string) []byte {
	t.Helper()
	k, err := keyring.ParseKey(s)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func encrypt(t testing.TB, plaintext string) string {
	t.Helper()
	s, err := EncryptSecret(key(t, testKeyHex), plaintext)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// validSystem is a minimal valid fhir system; cases change it.
func validSystem() map[string]any {
	return map[string]any{"name": "clinic-a", "adapter": "fhir", "base_url": "https://ehr.example/fhir"}
}

func fileOf(t testing.TB, doc map[string]any) []byte {
	t.Helper()
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func systemsFile(t testing.TB, systems ...map[string]any) []byte {
	t.Helper()
	list := make([]any, len(systems))
	for i, s := range systems {
		list[i] = s
	}
	return fileOf(t, map[string]any{"ehr_systems": list})
}

func mustParse(t *testing.T, data []byte) *Config {
	t.Helper()
	cfg, err := Parse(testAdapters, data, key(t, testKeyHex), env(map[string]string{"EHR_SECRET": plainSecret}))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, data)
	}
	return cfg
}

func TestParse_ContractExample(t *testing.T) {
	secret := encrypt(t, plainSecret)
	data := []byte(`
ehr_systems:
  - name: clinic-a              # unique; appears in metadata.sources
    adapter: fhir               # fhir (REST, FHIR R4) or wsbot (WebSocket bot)
    base_url: https://ehr.example/fhir
    search_endpoint: /Patient
    search_types: [patient_record]
    sites: [main-campus]        # optional: filters.location values this system serves
    authentication:
      type: oauth2              # oauth2 | api_key | basic
      token_url: https://ehr.example/oauth2/token
      client_id: carebridge
      client_secret: ` + secret + ` # or env:VAR_NAME; plaintext secrets are refused
      scopes: [system/Patient.read]
      # api_key: enc:v1:...  api_key_header: X-API-Key
      # username: u  password: enc:v1:...
    rate_limit: { requests_per_minute: 300 }
    timeout: 5000               # milliseconds, per request
    retry_attempts: 3           # exponential backoff with jitter; honours Retry-After
    sync: { interval: 60s }     # optional: poll for appointment changes made in the EHR
  - name: bot.b
    adapter: wsbot
    base_url: wss://bot.example/ws
    authentication:
      type: api_key
      api_key: env:EHR_SECRET
  - name: clinic_c
    adapter: fhir
    base_url: http://127.0.0.1:8081/fhir/R4
    authentication:
      type: basic
      username: u
      password: ` + encrypt(t, "pw") + `
integration:
  ehr: clinic-a                 # the system behind /appointment and /agents
`)
	cfg := mustParse(t, data)
	want := &Config{
		Systems: []System{{
			Name:           "clinic-a",
			Adapter:        Adapter("fhir"),
			BaseURL:        "https://ehr.example/fhir",
			SearchEndpoint: "/Patient",
			SearchTypes:    []SearchType{SearchPatientRecord},
			Sites:          []string{"main-campus"},
			Auth: Auth{
				Type:         AuthOAuth2,
				TokenURL:     "https://ehr.example/oauth2/token",
				ClientID:     "carebridge",
				ClientSecret: NewSecret(plainSecret),
				Scopes:       []string{"system/Patient.read"},
			},
			RateLimit:     RateLimit{RequestsPerMinute: 300},
			Timeout:       5 * time.Second,
			RetryAttempts: 3,
			SyncInterval:  60 * time.Second,
		}, {
			Name:           "bot.b",
			Adapter:        Adapter("wsbot"),
			BaseURL:        "wss://bot.example/ws",
			SearchEndpoint: "patients.search",
			SearchTypes:    []SearchType{SearchPatientRecord},
			Auth:           Auth{Type: AuthAPIKey, APIKey: NewSecret(plainSecret), APIKeyHeader: "X-API-Key"},
			Timeout:        DefaultTimeout,
		}, {
			Name:           "clinic_c",
			Adapter:        Adapter("fhir"),
			BaseURL:        "http://127.0.0.1:8081/fhir/R4",
			SearchEndpoint: "/Patient",
			SearchTypes:    []SearchType{SearchPatientRecord},
			Auth:           Auth{Type: AuthBasic, Username: "u", Password: NewSecret("pw")},
			Timeout:        DefaultTimeout,
		}},
		Integration: Integration{EHR: "clinic-a"},
	}
	if !reflect.DeepEqual(cfg, want) {
		t.Fatalf("got\n%#v\nwant\n%#v", cfg, want)
	}
	if s, ok := cfg.System("bot.b"); !ok || s.Adapter != Adapter("wsbot") {
		t.Errorf("System(bot.b) = %v, %v", s, ok)
	}
	if _, ok := cfg.System("nope"); ok {
		t.Error("System(nope) found")
	}
}

func TestParse_Defaults(t *testing.T) {
	cfg := mustParse(t, systemsFile(t, validSystem()))
	s := cfg.Systems[0]
	if s.SearchEndpoint != "/Patient" || s.Timeout != 5*time.Second || s.RetryAttempts != 0 ||
		s.RateLimit.RequestsPerMinute != 0 || s.Auth.Type != AuthNone ||
		!reflect.DeepEqual(s.SearchTypes, []SearchType{SearchPatientRecord}) || cfg.Integration.EHR != "" {
		t.Errorf("defaults: %+v", s)
	}
	if _, err := Parse(testAdapters, systemsFile(t, validSystem()), nil, nil); err != nil {
		t.Errorf("a file without secrets needs no key: %v", err)
	}
}

func TestParse_Validation(t *testing.T) {
	type change func(m map[string]any)
	set := func(kv ...any) change {
		return func(m map[string]any) {
			for i := 0; i < len(kv); i += 2 {
				if kv[i+1] == nil {
					delete(m, kv[i].(string))
				} else {
					m[kv[i].(string)] = kv[i+1]
				}
			}
		}
	}
	auth := func(a map[string]any) change { return set("authentication", a) }
	oauth := func(kv ...any) change {
		a := map[string]any{"type": "oauth2", "token_url": "https://ehr.example/token", "client_id": "cb", "client_secret": "env:EHR_SECRET"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(a, kv[i].(string))
			} else {
				a[kv[i].(string)] = kv[i+1]
			}
		}
		return auth(a)
	}
	tests := []struct {
		name   string
		change change
		want   string // "" = valid
		check  func(t *testing.T, s System)
	}{
		{"name missing", set("name", nil), "ehr_systems[0]: name: is required", nil},
		{"name with space", set("name", "clinic a"), "ehr_systems[0]: name: must be 1 to 64 letters", nil},
		{"name with slash", set("name", "a/b"), "ehr_systems[0]: name: must be", nil},
		{"name too long", set("name", strings.Repeat("a", 65)), "name: must be", nil},
		{"name of 64", set("name", strings.Repeat("a", 64)), "", nil},
		{"name with dot underscore dash", set("name", "A.b_c-9"), "", nil},

		{"adapter missing", set("adapter", nil), "ehr_systems[0] clinic-a: adapter: is required", nil},
		{"adapter unknown", set("adapter", "hl7"), "clinic-a: adapter: must be fhir or wsbot", nil},

		{"base_url missing", set("base_url", nil), "clinic-a: base_url: is required", nil},
		{"fhir base_url ws", set("base_url", "wss://x.example/"), "base_url: must be an absolute http or https URL", nil},
		{"fhir base_url relative", set("base_url", "/fhir"), "base_url: must be an absolute", nil},
		{"fhir base_url no host", set("base_url", "https:///fhir"), "base_url: must be an absolute", nil},
		{"fhir base_url opaque", set("base_url", "https:ehr.example"), "base_url: must be an absolute", nil},
		{"base_url with credentials", set("base_url", "https://user:hunter2@ehr.example/"), "base_url: must not contain credentials", nil},
		{"base_url with fragment", set("base_url", "https://ehr.example/#x"), "base_url: must not contain a fragment", nil},
		{"fhir base_url http on loopback", set("base_url", "http://127.0.0.1:8081/fhir"), "", nil},
		{"wsbot base_url https", set("adapter", "wsbot"), "base_url: must be an absolute ws or wss URL", nil},
		{"wsbot base_url ws", set("adapter", "wsbot", "base_url", "ws://127.0.0.1:9000/bot"), "", func(t *testing.T, s System) {
			if s.SearchEndpoint != "patients.search" {
				t.Errorf("wsbot search_endpoint = %q", s.SearchEndpoint)
			}
		}},

		{"fhir search_endpoint relative", set("search_endpoint", "Patient"), "search_endpoint: must be a path beginning with '/'", nil},
		{"fhir search_endpoint query", set("search_endpoint", "/Patient?x=1"), "search_endpoint: must be a path", nil},
		{"fhir search_endpoint custom", set("search_endpoint", "/r4/Patient/_search"), "", func(t *testing.T, s System) {
			if s.SearchEndpoint != "/r4/Patient/_search" {
				t.Errorf("search_endpoint = %q", s.SearchEndpoint)
			}
		}},
		{"wsbot search_endpoint with space", set("adapter", "wsbot", "base_url", "wss://b.example", "search_endpoint", "patients search"), "search_endpoint: must be an action name", nil},

		{"search_types unknown", set("search_types", []string{"patient_record", "lab_result"}), "search_types[1]: unknown search type", nil},
		{"search_types duplicate", set("search_types", []string{"patient_record", "patient_record"}), "search_types[1]: duplicate", nil},
		{"search_types empty list", set("search_types", []string{}), "", func(t *testing.T, s System) {
			if !reflect.DeepEqual(s.SearchTypes, []SearchType{SearchPatientRecord}) {
				t.Errorf("search_types = %v", s.SearchTypes)
			}
		}},

		{"sites empty", set("sites", []string{"a", ""}), "sites[1]: must be non-empty", nil},
		{"sites spaces", set("sites", []string{" a"}), "sites[0]: must be non-empty, without surrounding spaces", nil},
		{"sites control", set("sites", []string{"a\x01"}), "sites[0]: must be at most 200", nil},
		{"sites duplicate", set("sites", []string{"a", "b", "a"}), "sites[2]: duplicate", nil},
		{"sites ok", set("sites", []string{"main-campus", "7f0c5a2e-1d1b-4c1e-9f7e-000000000001"}), "", nil},

		{"timeout zero", set("timeout", 0), "timeout: must be from 1 to 120000 milliseconds", nil},
		{"timeout negative", set("timeout", -5), "timeout: must be from 1", nil},
		{"timeout too long", set("timeout", 120001), "timeout: must be from 1", nil},
		{"timeout not a number", set("timeout", "5s"), "cannot unmarshal !!str into int", nil},
		{"timeout bounds", set("timeout", 1), "", func(t *testing.T, s System) {
			if s.Timeout != time.Millisecond {
				t.Errorf("timeout = %v", s.Timeout)
			}
		}},
		{"timeout max", set("timeout", 120000), "", func(t *testing.T, s System) {
			if s.Timeout != 2*time.Minute {
				t.Errorf("timeout = %v", s.Timeout)
			}
		}},

		{"retry_attempts negative", set("retry_attempts", -1), "retry_attempts: must be from 0 to 10", nil},
		{"retry_attempts too many", set("retry_attempts", 11), "retry_attempts: must be from 0 to 10", nil},
		{"retry_attempts max", set("retry_attempts", 10), "", func(t *testing.T, s System) {
			if s.RetryAttempts != 10 {
				t.Errorf("retry_attempts = %d", s.RetryAttempts)
			}
		}},

		{"rate limit negative", set("rate_limit", map[string]any{"requests_per_minute": -1}), "rate_limit.requests_per_minute: must be from 0 (unlimited) to 100000", nil},
		{"rate limit too high", set("rate_limit", map[string]any{"requests_per_minute": 100001}), "rate_limit.requests_per_minute: must be from 0", nil},
		{"rate limit unknown key", set("rate_limit", map[string]any{"per_second": 5}), "field per_second not found in type RateLimit", nil},
		{"rate limit zero", set("rate_limit", map[string]any{"requests_per_minute": 0}), "", nil},
		{"rate limit max", set("rate_limit", map[string]any{"requests_per_minute": 100000}), "", func(t *testing.T, s System) {
			if s.RateLimit.RequestsPerMinute != 100000 {
				t.Errorf("rpm = %d", s.RateLimit.RequestsPerMinute)
			}
		}},

		{"auth type unknown", auth(map[string]any{"type": "kerberos"}), "authentication.type: must be oauth2, private_key_jwt, api_key or basic", nil},
		{"auth type none explicit", auth(map[string]any{"type": "none"}), "", nil},
		{"auth fields without type", auth(map[string]any{"username": "u"}), "authentication.username: is given but authentication.type is missing", nil},
		{"oauth2 valid", oauth(), "", func(t *testing.T, s System) {
			if s.Auth.Type != AuthOAuth2 || s.Auth.ClientSecret.Value() != plainSecret || s.Auth.Scopes != nil {
				t.Errorf("auth = %+v", s.Auth)
			}
		}},
		{"oauth2 token_url missing", oauth("token_url", nil), "authentication.token_url: is required (an http or https URL)", nil},
		{"oauth2 token_url scheme", oauth("token_url", "ftp://ehr.example/token"), "authentication.token_url: must be an absolute http or https URL", nil},
		{"oauth2 client_id missing", oauth("client_id", nil), "authentication.client_id: is required for oauth2", nil},
		{"oauth2 client_secret missing", oauth("client_secret", nil), "authentication.client_secret: is required for oauth2", nil},
		{"oauth2 scope with space", oauth("scopes", []string{"a b"}), "authentication.scopes[0]: must be non-empty", nil},
		{"oauth2 scope empty", oauth("scopes", []string{""}), "authentication.scopes[0]: must be non-empty", nil},
		{"oauth2 with password", oauth("password", "env:EHR_SECRET"), "authentication.password: is not used with type oauth2", nil},
		{"api_key valid", auth(map[string]any{"type": "api_key", "api_key": "env:EHR_SECRET"}), "", func(t *testing.T, s System) {
			if s.Auth.APIKeyHeader != "X-API-Key" || s.Auth.APIKey.Value() != plainSecret {
				t.Errorf("auth = %+v", s.Auth)
			}
		}},
		{"api_key custom header", auth(map[string]any{"type": "api_key", "api_key": "env:EHR_SECRET", "api_key_header": "Ocp-Apim-Subscription-Key"}), "", func(t *testing.T, s System) {
			if s.Auth.APIKeyHeader != "Ocp-Apim-Subscription-Key" {
				t.Errorf("header = %q", s.Auth.APIKeyHeader)
			}
		}},
		{"api_key missing", auth(map[string]any{"type": "api_key"}), "authentication.api_key: is required for api_key", nil},
		{"api_key bad header", auth(map[string]any{"type": "api_key", "api_key": "env:EHR_SECRET", "api_key_header": "X Key:"}), "authentication.api_key_header: is not a valid HTTP header name", nil},
		{"api_key with client_id", auth(map[string]any{"type": "api_key", "api_key": "env:EHR_SECRET", "client_id": "x"}), "authentication.client_id: is not used with type api_key", nil},
		{"basic valid", auth(map[string]any{"type": "basic", "username": "u", "password": "env:EHR_SECRET"}), "", nil},
		{"basic username missing", auth(map[string]any{"type": "basic", "password": "env:EHR_SECRET"}), "authentication.username: is required for basic", nil},
		{"basic username colon", auth(map[string]any{"type": "basic", "username": "a:b", "password": "env:EHR_SECRET"}), "authentication.username: must not contain ':'", nil},
		{"basic password missing", auth(map[string]any{"type": "basic", "username": "u"}), "authentication.password: is required for basic", nil},
		{"basic with api_key_header", auth(map[string]any{"type": "basic", "username": "u", "password": "env:EHR_SECRET", "api_key_header": "X-Key"}), "authentication.api_key_header: is not used with type basic", nil},
		{"auth unknown key", auth(map[string]any{"type": "basic", "user": "u"}), "field user not found in type Auth", nil},

		{"unknown system key", set("timeout_ms", 5), "field timeout_ms not found in type System", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := validSystem()
			tt.change(m)
			data := systemsFile(t, m)
			cfg, err := Parse(testAdapters, data, key(t, testKeyHex), env(map[string]string{"EHR_SECRET": plainSecret}))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Parse: %v\n%s", err, data)
				}
				if tt.check != nil {
					tt.check(t, cfg.Systems[0])
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want error %q\n%s", tt.want, data)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), plainSecret) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error reveals a secret: %v", err)
			}
			if cfg != nil {
				t.Error("a config returned with an error")
			}
		})
	}
}

func TestParse_PlaintextURLsOnlyOnLoopback(t *testing.T) {
	oauth := func(tokenURL string) map[string]any {
		return map[string]any{"type": "oauth2", "token_url": tokenURL, "client_id": "cb", "client_secret": "env:EHR_SECRET"}
	}
	tests := []struct {
		name     string
		adapter  string
		baseURL  string
		tokenURL string // "" = no authentication
		want     string // "" = valid
	}{
		{"fhir https", "fhir", "https://ehr.example/fhir", "", ""},
		{"fhir http on 127.0.0.1", "fhir", "http://127.0.0.1:8081/fhir", "", ""},
		{"fhir http on 127.255.0.9", "fhir", "http://127.255.0.9/fhir", "", ""},
		{"fhir http on localhost", "fhir", "http://localhost:8081/fhir", "", ""},
		{"fhir http on LocalHost", "fhir", "http://LocalHost/fhir", "", ""},
		{"fhir http on ::1", "fhir", "http://[::1]:8081/fhir", "", ""},
		{"fhir http on a name", "fhir", "http://ehr.example/fhir", "", "ehr_systems[0] clinic-a: base_url: must be https (http only on a loopback host)"},
		{"fhir http on a private address", "fhir", "http://10.0.0.7/fhir", "", "ehr_systems[0] clinic-a: base_url: must be https (http only on a loopback host)"},
		{"fhir http on 0.0.0.0", "fhir", "http://0.0.0.0/fhir", "", "base_url: must be https (http only"},
		{"fhir http on a localhost lookalike", "fhir", "http://localhost.ehr.example/fhir", "", "base_url: must be https (http only"},
		{"fhir http on 127.0.0.1 as a subdomain", "fhir", "http://127.0.0.1.ehr.example/fhir", "", "base_url: must be https (http only"},
		{"wsbot wss", "wsbot", "wss://bot.example/ws", "", ""},
		{"wsbot ws on 127.0.0.1", "wsbot", "ws://127.0.0.1:9000/bot", "", ""},
		{"wsbot ws on ::1", "wsbot", "ws://[::1]:9000/bot", "", ""},
		{"wsbot ws on a name", "wsbot", "ws://bot.example/ws", "", "ehr_systems[0] clinic-a: base_url: must be wss (ws only on a loopback host)"},
		{"oauth2 token_url https", "fhir", "https://ehr.example/fhir", "https://ehr.example/token", ""},
		{"oauth2 token_url http on loopback", "fhir", "http://127.0.0.1/fhir", "http://127.0.0.1:9/token", ""},
		{"oauth2 token_url http on a name", "fhir", "https://ehr.example/fhir", "http://ehr.example/token", "ehr_systems[0] clinic-a: authentication.token_url: must be https (http only on a loopback host)"},
		{"wsbot oauth2 token_url http on a name", "wsbot", "wss://bot.example/ws", "http://ehr.example/token", "authentication.token_url: must be https (http only"},
		{"wsbot oauth2 token_url ws", "wsbot", "wss://bot.example/ws", "wss://ehr.example/token", "authentication.token_url: must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sys := map[string]any{"name": "clinic-a", "adapter": tt.adapter, "base_url": tt.baseURL}
			if tt.tokenURL != "" {
				sys["authentication"] = oauth(tt.tokenURL)
			}
			_, err := Parse(testAdapters, systemsFile(t, sys), nil, env(map[string]string{"EHR_SECRET": plainSecret}))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Parse: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Parse succeeded, want %q", tt.want)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParse_FileRules(t *testing.T) {
	other := validSystem()
	other["name"] = "clinic-b"
	tests := []struct {
		name string
		data string
		want string
	}{
		{"empty", "", "EHR systems file is empty"},
		{"comment only", "# nothing\n", "EHR systems file is empty"},
		{"no systems", "ehr_systems: []\n", "ehr_systems: at least one system is required"},
		{"null systems", "ehr_systems:\n", "ehr_systems: at least one system is required"},
		{"not a mapping", "- a\n- b\n", "cannot unmarshal"},
		{"unknown top-level key", string(systemsFile(t, validSystem())) + "extra: 1\n", "field extra not found"},
		{"unknown integration key", string(systemsFile(t, validSystem())) + "integration: {ehr: clinic-a, other: x}\n", "field other not found in type Integration"},
		{"duplicate key", "ehr_systems: []\nehr_systems: []\n", "already defined"},
		{"two documents", string(systemsFile(t, validSystem())) + "---\nehr_systems: []\n", "more than one YAML document"},
		{"syntax error", "ehr_systems: [\n", "EHR systems file: yaml:"},
		{"duplicate names", string(systemsFile(t, validSystem(), other, validSystem())), "ehr_systems[2] clinic-a: name: duplicates ehr_systems[0]"},
		{"integration unknown", string(systemsFile(t, validSystem())) + "integration: {ehr: clinic-z}\n", "integration.ehr: names no system in ehr_systems"},
		{"too large", "ehr_systems: []\n#" + strings.Repeat("x", MaxFileSize), "larger than 1048576 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(testAdapters, []byte(tt.data), nil, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	t.Run("integration empty is none", func(t *testing.T) {
		cfg := mustParse(t, []byte(string(systemsFile(t, validSystem()))+"integration: {ehr: \"\"}\n"))
		if cfg.Integration.EHR != "" {
			t.Errorf("integration = %q", cfg.Integration.EHR)
		}
	})
}

func TestParse_ReportsEveryProblemAtOnce(t *testing.T) {
	a := validSystem()
	a["adapter"] = "soap"
	a["timeout"] = 0
	b := validSystem()
	b["name"] = "clinic-b"
	b["authentication"] = map[string]any{"type": "oauth2", "client_secret": "plain"}
	data := string(systemsFile(t, a, b)) + "integration: {ehr: nobody}\n"
	_, err := Parse(testAdapters, []byte(data), nil, nil)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"ehr_systems[0] clinic-a: adapter: must be fhir or wsbot",
		"ehr_systems[0] clinic-a: timeout: must be from 1",
		"ehr_systems[1] clinic-b: authentication.token_url: is required",
		"ehr_systems[1] clinic-b: authentication.client_id: is required",
		"ehr_systems[1] clinic-b: authentication.client_secret: plaintext secrets are refused; use enc:v1: or env:",
		"integration.ehr: names no system",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if n := len(strings.Split(err.Error(), "\n")); n != 6 {
		t.Errorf("%d problems reported, want 6:\n%v", n, err)
	}
	if strings.Contains(err.Error(), "plain\n") || strings.HasSuffix(err.Error(), "plain") {
		t.Errorf("error repeats the plaintext secret: %v", err)
	}
}

func TestParse_TypeErrorsAndRulesTogether(t *testing.T) {
	_, err := Parse(testAdapters, []byte("ehr_systems:\n  - {name: x y, adapter: fhir, base_url: 'https://e.example', timeout: 5s, colour: red}\n"), nil, nil)
	for _, want := range []string{"line 2: cannot unmarshal !!str into int", "field colour not found in type System", "ehr_systems[0]: name: must be"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestParse_Secrets(t *testing.T) {
	withSecret := func(written string) []byte {
		m := validSystem()
		m["authentication"] = map[string]any{"type": "api_key", "api_key": written}
		return systemsFile(t, m)
	}
	good := encrypt(t, plainSecret)
	sealed := strings.TrimPrefix(good, EncPrefix)
	tests := []struct {
		name    string
		written string
		key     []byte
		env     map[string]string
		want    string // the secret, or the error's text when wantErr
		wantErr bool
	}{
		{"enc round trip", good, key(t, testKeyHex), nil, plainSecret, false},
		{"enc with padding", good + "==", key(t, testKeyHex), nil, plainSecret, false},
		{"env", "env:EHR_API_KEY", nil, map[string]string{"EHR_API_KEY": plainSecret}, plainSecret, false},
		{"env missing", "env:EHR_API_KEY", nil, nil, "authentication.api_key: environment variable EHR_API_KEY is not set or empty", true},
		{"env empty", "env:EHR_API_KEY", nil, map[string]string{"EHR_API_KEY": ""}, "environment variable EHR_API_KEY is not set or empty", true},
		{"env bad name", "env:EHR-KEY", nil, nil, "env: must be followed by a variable name", true},
		{"env no name", "env:", nil, nil, "env: must be followed by a variable name", true},
		{"plaintext", plainSecret, key(t, testKeyHex), nil, "authentication.api_key: plaintext secrets are refused; use enc:v1: or env:", true},
		{"enc without key", good, nil, nil, "EHR_CREDENTIALS_KEY is required", true},
		{"enc wrong key", good, key(t, otherKeyHex), nil, "cannot decrypt enc:v1: value (wrong EHR_CREDENTIALS_KEY", true},
		{"enc key of wrong size", good, []byte("short"), nil, "EHR_CREDENTIALS_KEY: must be 32 bytes, got 5", true},
		{"enc tampered", EncPrefix + flipLast(sealed), key(t, testKeyHex), nil, "cannot decrypt", true},
		{"enc truncated", EncPrefix + sealed[:20], key(t, testKeyHex), nil, "enc:v1: value is too short", true},
		{"enc not base64", EncPrefix + "!!!" + sealed, key(t, testKeyHex), nil, "not valid base64url", true},
		{"enc other version", "enc:v2:" + sealed, key(t, testKeyHex), nil, "unsupported encrypted form", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse(testAdapters, withSecret(tt.written), tt.key, env(tt.env))
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.Systems[0].Auth.APIKey.Value(); got != tt.want {
					t.Errorf("secret = %q, want %q", got, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), plainSecret) || strings.Contains(err.Error(), sealed[:16]) {
				t.Errorf("error reveals the secret or its written form: %v", err)
			}
		})
	}
}

// flipLast changes a character in the middle of s: the last one of
// unpadded base64 may carry only unused bits and decode to the same bytes.
func flipLast(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestEncryptSecret(t *testing.T) {
	k := key(t, testKeyHex)
	a, err := EncryptSecret(k, plainSecret)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := EncryptSecret(k, plainSecret)
	if !strings.HasPrefix(a, "enc:v1:") || a == b {
		t.Errorf("want distinct enc:v1: forms (random nonce), got %q and %q", a, b)
	}
	if strings.ContainsAny(strings.TrimPrefix(a, EncPrefix), "+/=:") {
		t.Errorf("not unpadded base64url: %q", a)
	}
	if _, err := EncryptSecret(k, ""); err == nil {
		t.Error("empty secret encrypted")
	}
	if _, err := EncryptSecret(k[:16], plainSecret); err == nil {
		t.Error("16-byte key accepted")
	}
	// The form is the one documented: base64url(nonce || ciphertext || tag).
	sealed, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(a, EncPrefix))
	if err != nil || len(sealed) != 12+len(plainSecret)+16 {
		t.Errorf("sealed length %d (%v), want %d", len(sealed), err, 12+len(plainSecret)+16)
	}
}

func TestSecret_Redacts(t *testing.T) {
	cfg := mustParse(t, []byte(`
ehr_systems:
  - name: a
    adapter: fhir
    base_url: https://ehr.example/
    authentication: {type: oauth2, token_url: "https://ehr.example/t", client_id: cid, client_secret: env:EHR_SECRET}
  - name: b
    adapter: fhir
    base_url: https://ehr.example/
    authentication: {type: basic, username: u, password: env:EHR_SECRET}
  - name: c
    adapter: fhir
    base_url: https://ehr.example/
    authentication: {type: api_key, api_key: env:EHR_SECRET}
`))
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		outs = append(outs, fmt.Sprintf(verb, cfg), fmt.Sprintf(verb, *cfg), fmt.Sprintf(verb, cfg.Systems[0].Auth),
			fmt.Sprintf(verb, cfg.Systems[0].Auth.ClientSecret))
	}
	j, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	for _, h := range []slog.Handler{slog.NewJSONHandler(&logs, nil), slog.NewTextHandler(&logs, nil)} {
		l := slog.New(h)
		for _, s := range cfg.Systems {
			l.Info("system", "system", s, "auth", s.Auth, "secret", s.Auth.Password, "config", cfg)
		}
	}
	outs = append(outs, string(j), string(y), logs.String())
	hexSecret := fmt.Sprintf("%x", plainSecret)
	for _, out := range outs {
		if strings.Contains(out, plainSecret) || strings.Contains(out, hexSecret) || strings.Contains(strings.ToLower(out), hexSecret) {
			t.Errorf("secret revealed in %q", out)
		}
	}
	if !strings.Contains(logs.String(), "[REDACTED]") || !strings.Contains(logs.String(), "client_id=cid") {
		t.Errorf("log lacks the redacted marker or the client id:\n%s", logs.String())
	}
	if NewSecret("").String() != "" || NewSecret("x").String() != "[REDACTED]" || !NewSecret("").IsZero() {
		t.Error("String of empty or set secret")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ehr.yaml")
	if err := os.WriteFile(path, systemsFile(t, validSystem()), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(testAdapters, path, nil, nil)
	if err != nil || len(cfg.Systems) != 1 {
		t.Fatalf("Load = %v, %v", cfg, err)
	}
	if _, err := Load(testAdapters, filepath.Join(dir, "missing.yaml"), nil, nil); err == nil {
		t.Error("missing file loaded")
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, append(systemsFile(t, validSystem()), bytes.Repeat([]byte("#"), MaxFileSize)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(testAdapters, big, nil, nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	k, err := keyring.ParseKey(testKeyHex)
	if err != nil {
		f.Fatal(err)
	}
	good, err := EncryptSecret(k, plainSecret)
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'https://e.example/', authentication: {type: api_key, api_key: " + good + "}}\nintegration: {ehr: a}\n"))
	f.Add([]byte("ehr_systems:\n  - {name: b, adapter: wsbot, base_url: 'wss://e.example/', timeout: 9, retry_attempts: 2, rate_limit: {requests_per_minute: 3}}\n"))
	f.Add([]byte("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'https://e.example/', authentication: {type: basic, username: u, password: env:X}}\n"))
	f.Add([]byte("ehr_systems: [{name: a}, {name: a}]\n---\n"))
	f.Add([]byte("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'https://e.example/', businesses: [6f1c2a3e-0000-4000-8000-00000000000a]}\nintegration: {ehr: a, by_business: {6F1C2A3E-0000-4000-8000-00000000000A: a}}\n"))
	f.Add([]byte("&a [*a]"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(testAdapters, data, k, env(map[string]string{"X": plainSecret}))
		if err != nil {
			if cfg != nil {
				t.Fatal("config with error")
			}
			if strings.Contains(err.Error(), plainSecret) {
				t.Fatalf("error reveals the secret: %v", err)
			}
			return
		}
		if len(cfg.Systems) == 0 {
			t.Fatal("valid config without systems")
		}
		for _, s := range cfg.Systems {
			if !validName(s.Name) || s.Timeout <= 0 || len(s.SearchTypes) == 0 || s.Auth.Type == "" {
				t.Fatalf("invalid system accepted: %+v", s)
			}
		}
		for b, name := range cfg.Integration.ByBusiness {
			if !cfg.Serves(name, b) {
				t.Fatalf("by_business %s names %s, which does not serve it", b, name)
			}
		}
	})
}
