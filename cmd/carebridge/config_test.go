package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/keyring"
	"github.com/carebridge/carebridge/app"
)

func envOf(m map[string]string) env { return func(k string) string { return m[k] } }

func TestLoadConfig_Defaults(t *testing.T) {
	cfg, _, err := loadConfig(envOf(map[string]string{
		"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != ":8080" || cfg.Objects != (app.ObjectStore{Dir: "./data/blobs"}) || cfg.MaxUploadBytes != 104857600 || cfg.BlobKeys != nil || cfg.DevKey != nil ||
		cfg.ReadAheadBytes != 0 {
		t.Fatalf("defaults %+v", cfg)
	}
	cfg, _, err = loadConfig(envOf(map[string]string{
		"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb", "DOWNLOAD_READAHEAD_BYTES": "16777216",
	}))
	if err != nil || cfg.ReadAheadBytes != 16<<20 {
		t.Fatalf("DOWNLOAD_READAHEAD_BYTES: %d, %v", cfg.ReadAheadBytes, err)
	}
}

func TestLoadConfig_ReportsEveryBadVariableOnOneLine(t *testing.T) {
	_, _, err := loadConfig(envOf(map[string]string{
		"CLOUD_STORAGE_CONNECTION_STRING": "ftp://x",
		"CLOUD_STORAGE_ENCRYPTION_KEY":    "too-short",
		"CLOUD_STORAGE_PREVIOUS_KEYS":     "k1",
		"MAX_UPLOAD_BYTES":                "-5",
		"DOWNLOAD_READAHEAD_BYTES":        "1000",
		"CORS_ALLOWED_ORIGINS":            "*",
		"LOG_LEVEL":                       "loud",
		"AUTH_DEV_MODE":                   "maybe",
		"CLAMD_ADDRESS":                   "http://127.0.0.1:3310",
		"WEBHOOK_ALLOW_PRIVATE":           "sometimes",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	line := oneLine(err)
	for _, v := range []string{"DATABASE_URL", "CLOUD_STORAGE_CONNECTION_STRING", "CLOUD_STORAGE_ENCRYPTION_KEY:", "CLOUD_STORAGE_PREVIOUS_KEYS",
		"MAX_UPLOAD_BYTES", "DOWNLOAD_READAHEAD_BYTES", "CORS_ALLOWED_ORIGINS", "LOG_LEVEL", "AUTH_DEV_MODE", "OIDC_ISSUER_URL", "OIDC_AUDIENCE", "CLAMD_ADDRESS", "WEBHOOK_ALLOW_PRIVATE"} {
		if !strings.Contains(line, v) {
			t.Errorf("%s not named in %q", v, line)
		}
	}
	if strings.Contains(line, "\n") || strings.Contains(line, "too-short") {
		t.Errorf("not one safe line: %q", line)
	}
}

func TestLoadConfig_DevModeOnlyOnLoopback(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "AUTH_DEV_MODE": "true", "DEV_KEY_FILE": t.TempDir() + "/k.pem"}
	base["HTTP_ADDR"] = "0.0.0.0:8080"
	if _, _, err := loadConfig(envOf(base)); err == nil || !strings.Contains(err.Error(), "AUTH_DEV_MODE") {
		t.Fatalf("dev mode on all interfaces: %v", err)
	}
	base["HTTP_ADDR"] = "127.0.0.1:8080"
	cfg, _, err := loadConfig(envOf(base))
	if err != nil || cfg.DevKey == nil || cfg.OIDCAudience != "carebridge" {
		t.Fatalf("dev mode on loopback: %+v %v", cfg, err)
	}
}

func TestLoadConfig_KeysAndOrigins(t *testing.T) {
	cfg, _, err := loadConfig(envOf(map[string]string{
		"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"CLOUD_STORAGE_ENCRYPTION_KEY": strings.Repeat("ab", 32),
		"CLOUD_STORAGE_PREVIOUS_KEYS":  "old:" + strings.Repeat("cd", 32),
		"CORS_ALLOWED_ORIGINS":         "https://app.example.com, http://localhost:3000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BlobKeys == nil || cfg.BlobKeys.CurrentID() != keyring.KeyID(bytes.Repeat([]byte{0xab}, 32)) || len(cfg.CORSAllowedOrigins) != 2 {
		t.Fatalf("%+v", cfg)
	}
	// A data key wrapped under the previous key still opens.
	old, err := keyring.New("old", bytes.Repeat([]byte{0xcd}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, wrapped, err := old.Wrap(make([]byte, keyring.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cfg.BlobKeys.Unwrap("old", wrapped); err != nil {
		t.Fatalf("previous key: %v", err)
	}
}

func TestRun_DevTokenAndUnknownCommand(t *testing.T) {
	var out bytes.Buffer
	e := envOf(map[string]string{"DEV_KEY_FILE": t.TempDir() + "/k.pem"})
	if err := run(context.Background(), []string{"dev-token", "--sub", "alice"}, e, nil, &out); err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimSpace(out.String()), "."); len(parts) != 3 {
		t.Fatalf("not a JWT: %q", out.String())
	}
	if err := run(context.Background(), []string{"dev-token"}, e, nil, &out); err == nil {
		t.Fatal("dev-token without --sub accepted")
	}
	if err := run(context.Background(), []string{"frobnicate"}, e, nil, &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}

func TestSecretsEncrypt_RoundTripsThroughTheEHRConfig(t *testing.T) {
	key := strings.Repeat("ab", 32)
	var out bytes.Buffer
	e := envOf(map[string]string{"EHR_CREDENTIALS_KEY": key})
	if err := run(context.Background(), []string{"secrets", "encrypt"}, e, strings.NewReader("s3cr3t-value\n"), &out); err != nil {
		t.Fatal(err)
	}
	enc := strings.TrimSpace(out.String())
	if !strings.HasPrefix(enc, "enc:v1:") || strings.Contains(enc, "s3cr3t") {
		t.Fatalf("encrypted form %q", enc)
	}
	file := t.TempDir() + "/ehr.yaml"
	yaml := "ehr_systems:\n  - name: a\n    adapter: fhir\n    base_url: http://127.0.0.1:1/fhir\n    authentication:\n      type: api_key\n      api_key: " + enc + "\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, _, err := loadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"EHR_CONFIG": file, "EHR_CREDENTIALS_KEY": key}))
	if err != nil || cfg.EHR.Systems[0].Auth.APIKey.Value() != "s3cr3t-value" {
		t.Fatalf("config %+v, %v", cfg.EHR, err)
	}
	if err := run(context.Background(), []string{"secrets", "encrypt"}, envOf(nil), strings.NewReader("x"), &out); err == nil {
		t.Fatal("encrypted without EHR_CREDENTIALS_KEY")
	}
}

func TestLoadConfig_SearchSettings(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb"}
	cfg, _, err := loadConfig(envOf(base))
	if err != nil || cfg.EHR != nil || cfg.SearchCacheTTL != 60*time.Second || cfg.SearchRateLimit != 120 || cfg.RedisURL != "" {
		t.Fatalf("defaults %+v %v", cfg, err)
	}
	bad := map[string]string{"SEARCH_CACHE_TTL": "soon", "SEARCH_RATE_LIMIT": "-1", "REDIS_URL": "http://127.0.0.1:6379", "EHR_CONFIG": "/does/not/exist.yaml"}
	for k, v := range base {
		bad[k] = v
	}
	_, _, err = loadConfig(envOf(bad))
	for _, name := range []string{"SEARCH_CACHE_TTL", "SEARCH_RATE_LIMIT", "REDIS_URL", "EHR_CONFIG"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s not reported: %v", name, err)
		}
	}
}

func TestRun_DevTokenScopes(t *testing.T) {
	e := envOf(map[string]string{"DEV_KEY_FILE": t.TempDir() + "/k.pem"})
	claims := func(args ...string) map[string]any {
		t.Helper()
		var out bytes.Buffer
		if err := run(context.Background(), append([]string{"dev-token", "--sub", "alice"}, args...), e, nil, &out); err != nil {
			t.Fatal(err)
		}
		parts := strings.Split(strings.TrimSpace(out.String()), ".")
		raw, err := base64.RawURLEncoding.DecodeString(parts[1])
		if err != nil {
			t.Fatal(err)
		}
		var c map[string]any
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := claims()["scope"]; got != "user/Patient.rs user/Appointment.cruds" {
		t.Fatalf("default scope %v, want the staff scopes", got)
	}
	if got := claims("--scope", " patient/Appointment.cus  ")["scope"]; got != "patient/Appointment.cus" {
		t.Fatalf("--scope gave %v", got)
	}
	if _, ok := claims("--scope", "")["scope"]; ok {
		t.Fatal(`--scope "" still carries a scope claim`)
	}
}

func TestLoadConfig_ServiceKeysInOrderFirstSeals(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb"}
	k1, k2 := bytes.Repeat([]byte{0xab}, 32), bytes.Repeat([]byte{0xfb}, 32)
	base["SERVICE_KEYS"] = " k2:" + base64.RawURLEncoding.EncodeToString(k2) + " , k1:" + hex.EncodeToString(k1)
	cfg, err := loadConfigOnly(envOf(base))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.ServiceKeys) != 2 || cfg.ServiceKeys[0].ID != "k2" || !bytes.Equal(cfg.ServiceKeys[0].Key, k2) ||
		cfg.ServiceKeys[1].ID != "k1" || !bytes.Equal(cfg.ServiceKeys[1].Key, k1) {
		t.Fatalf("SERVICE_KEYS = %+v, want k2 then k1", cfg.ServiceKeys)
	}
	delete(base, "SERVICE_KEYS")
	if cfg, err := loadConfigOnly(envOf(base)); err != nil || len(cfg.ServiceKeys) != 0 || len(cfg.LegacyKeys) != 0 {
		t.Fatalf("unset: %+v %+v %v; want no keys (the key kept in PostgreSQL)", cfg.ServiceKeys, cfg.LegacyKeys, err)
	}
}

func TestLoadConfig_RefusesAMalformedServiceKeysOnOneLine(t *testing.T) {
	good := hex.EncodeToString(bytes.Repeat([]byte{0xab}, 32))
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0xcd}, 16))
	for name, value := range map[string]string{
		"bad id":        "k/1:" + good,
		"empty id":      ":" + good,
		"no id":         good,
		"short key":     "k1:" + short,
		"bad encoding":  "k1:" + strings.Repeat("zz", 32),
		"duplicate id":  "k1:" + good + ",k1:" + short,
		"empty entry":   "k1:" + good + ",",
		"all-zero key":  "k1:" + strings.Repeat("00", 32),
		"second is bad": "k1:" + good + ",k2:" + short,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfigOnly(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
				"SERVICE_KEYS": value}))
			if err == nil {
				t.Fatal("accepted")
			}
			line := oneLine(err)
			if !strings.HasPrefix(line, "SERVICE_KEYS: ") || strings.Contains(line, "\n") || strings.Contains(line, good) || strings.Contains(line, short) {
				t.Fatalf("error %q: want one line naming SERVICE_KEYS, without key material", line)
			}
		})
	}
}

// The keys of earlier versions stay among the keys that open: webhook
// secrets were sealed, and fingerprints keyed, under keys derived from
// EHR_CREDENTIALS_KEY, else CLOUD_STORAGE_ENCRYPTION_KEY.
func TestLoadConfig_LegacyKeysStillOpen(t *testing.T) {
	cred, blob := bytes.Repeat([]byte{0xab}, 32), bytes.Repeat([]byte{0xcd}, 32)
	cfg, err := loadConfigOnly(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"EHR_CREDENTIALS_KEY": hex.EncodeToString(cred), "CLOUD_STORAGE_ENCRYPTION_KEY": hex.EncodeToString(blob),
		"SERVICE_KEYS": "k1:" + strings.Repeat("ef", 32)}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.LegacyKeys) != 2 || cfg.LegacyKeys[0].ID != legacyEHRCredentialsID || !bytes.Equal(cfg.LegacyKeys[0].Key, cred) ||
		cfg.LegacyKeys[1].ID != legacyBlobID || !bytes.Equal(cfg.LegacyKeys[1].Key, blob) || len(cfg.ServiceKeys) != 1 {
		t.Fatalf("legacy keys %+v, service keys %+v", cfg.LegacyKeys, cfg.ServiceKeys)
	}
}

// No variable is required beyond those the contract says are: an
// integration EHR and REDIS_URL start without EHR_CREDENTIALS_KEY (needed
// only for enc: values) and without any other key.
func TestLoadConfig_IntegrationEHRAndRedisNeedNoKey(t *testing.T) {
	file := t.TempDir() + "/ehr.yaml"
	yaml := "ehr_systems:\n  - name: a\n    adapter: fhir\n    base_url: http://127.0.0.1:1/fhir\n    authentication:\n      type: api_key\n      api_key: env:EHR_A_KEY\nintegration:\n  ehr: a\n"
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"EHR_CONFIG": file, "EHR_A_KEY": "plain-from-env", "REDIS_URL": "redis://127.0.0.1:6379/3"}
	cfg, err := loadConfigOnly(envOf(env))
	if err != nil || cfg.EHR.Integration.EHR != "a" || cfg.RedisURL == "" {
		t.Fatalf("integration.ehr and REDIS_URL without a key: %v", err)
	}
	// enc: values still need EHR_CREDENTIALS_KEY.
	yaml = strings.Replace(yaml, "env:EHR_A_KEY", "enc:v1:AAAA", 1)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadConfigOnly(envOf(env)); err == nil || !strings.Contains(err.Error(), "EHR_CREDENTIALS_KEY") {
		t.Fatalf("enc: values without EHR_CREDENTIALS_KEY: %v", err)
	}
}

func loadConfigOnly(e env) (app.Config, error) {
	cfg, _, err := loadConfig(e)
	return cfg, err
}

func TestLoadConfig_EventSettings(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb"}
	with := func(kv ...string) env {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return envOf(m)
	}
	cfg, err := loadConfigOnly(with("EVENTS_NATS_URL", "nats://127.0.0.1:4222,tls://nats-2:4222"))
	if err != nil || cfg.EventsNATSURL != "nats://127.0.0.1:4222,tls://nats-2:4222" {
		t.Fatalf("EVENTS_NATS_URL: %q %v", cfg.EventsNATSURL, err)
	}
	if _, err := loadConfigOnly(with("EVENTS_NATS_URL", "http://127.0.0.1:4222")); err == nil || !strings.Contains(err.Error(), "EVENTS_NATS_URL") {
		t.Fatalf("an http URL for NATS: %v", err)
	}
}

// What app.New used to refuse only after connecting (a key id that is not
// one, a malformed s3:// string, a bad SERVICE_KEYS, the syntax of URLs and
// of the listen address) is refused here, every problem at once.
func TestLoadConfig_ReportsWhatAppUsedToRefuseAllAtOnce(t *testing.T) {
	_, _, err := loadConfig(envOf(map[string]string{
		"DATABASE_URL":                    "postgres://x",
		"HTTP_ADDR":                       "8080",
		"CLOUD_STORAGE_CONNECTION_STRING": "s3://AKID:s3cr3t-secret@host:9000/some/path",
		"CLOUD_STORAGE_ENCRYPTION_KEY":    strings.Repeat("ab", 32),
		"CLOUD_STORAGE_ENCRYPTION_KEY_ID": "not/an/id",
		"SERVICE_KEYS":                    "k1:short",
		"OIDC_ISSUER_URL":                 "id.example",
		"OIDC_AUDIENCE":                   "cb",
		"REDIS_URL":                       "redis://127.0.0.1:6379/notadb",
		"EVENTS_NATS_URL":                 "nats://",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	line := oneLine(err)
	for _, v := range []string{"HTTP_ADDR", "CLOUD_STORAGE_CONNECTION_STRING", "CLOUD_STORAGE_ENCRYPTION_KEY:", "SERVICE_KEYS",
		"OIDC_ISSUER_URL", "REDIS_URL", "EVENTS_NATS_URL"} {
		if !strings.Contains(line, v) {
			t.Errorf("%s not named in %q", v, line)
		}
	}
	if strings.Contains(line, "s3cr3t") || strings.Contains(line, strings.Repeat("ab", 32)) {
		t.Errorf("secret in %q", line)
	}
}

func TestParseObjectStore(t *testing.T) {
	if got, err := parseObjectStore("FILE:///var/blobs"); err != nil || got != (app.ObjectStore{Dir: "/var/blobs"}) {
		t.Fatalf("file: %+v %v", got, err)
	}
	got, err := parseObjectStore("s3://AK:SK@127.0.0.1:9000?secure=false&bucket_prefix=cb-")
	if err != nil || got.S3 == nil || got.S3.Endpoint != "127.0.0.1:9000" || got.S3.Secure || got.S3.BucketPrefix != "cb-" {
		t.Fatalf("s3: %+v %v", got, err)
	}
	for _, bad := range []string{"ftp://x", "file://", "s3://"} {
		if _, err := parseObjectStore(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoadConfig_ClamdAddress(t *testing.T) {
	for v, want := range map[string][2]string{
		"tcp://127.0.0.1:3310":         {"tcp", "127.0.0.1:3310"},
		"unix:///run/clamav/clamd.ctl": {"unix", "/run/clamav/clamd.ctl"},
	} {
		cfg, _, err := loadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "a", "CLAMD_ADDRESS": v}))
		if err != nil || cfg.Scanner == nil || cfg.Scanner.Network != want[0] || cfg.Scanner.Address != want[1] {
			t.Errorf("CLAMD_ADDRESS=%s: %+v, %v", v, cfg.Scanner, err)
		}
	}
	cfg, _, err := loadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "a"}))
	if err != nil || cfg.Scanner != nil {
		t.Fatalf("without CLAMD_ADDRESS: %+v, %v", cfg.Scanner, err)
	}
}

func TestLoadConfig_WebhookAllowPrivate(t *testing.T) {
	for v, want := range map[string]bool{"": false, "false": false, "true": true} {
		cfg, _, err := loadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example",
			"OIDC_AUDIENCE": "cb", "WEBHOOK_ALLOW_PRIVATE": v}))
		if err != nil {
			t.Fatalf("WEBHOOK_ALLOW_PRIVATE=%q: %v", v, err)
		}
		if cfg.WebhookAllowPrivate != want {
			t.Errorf("WEBHOOK_ALLOW_PRIVATE=%q: %v, want %v", v, cfg.WebhookAllowPrivate, want)
		}
	}
}

func TestLoadConfig_ScannerLimits(t *testing.T) {
	base := map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "a", "CLAMD_ADDRESS": "tcp://127.0.0.1:3310"}
	with := func(extra map[string]string) map[string]string {
		m := maps.Clone(base)
		maps.Copy(m, extra)
		return m
	}
	cfg, _, err := loadConfig(envOf(with(map[string]string{"CLAMD_MAX_CONNECTIONS": "4", "CLAMD_WAIT_TIMEOUT": "3s"})))
	if err != nil || cfg.Scanner == nil || cfg.Scanner.MaxConns != 4 || cfg.Scanner.WaitTimeout != 3*time.Second {
		t.Fatalf("limits: %+v, %v", cfg.Scanner, err)
	}
	cfg, _, err = loadConfig(envOf(base))
	if err != nil || cfg.Scanner.MaxConns != 0 || cfg.Scanner.WaitTimeout != 0 { // clamd's defaults apply
		t.Fatalf("without limits: %+v, %v", cfg.Scanner, err)
	}
	_, _, err = loadConfig(envOf(with(map[string]string{"CLAMD_MAX_CONNECTIONS": "0", "CLAMD_WAIT_TIMEOUT": "soon"})))
	for _, name := range []string{"CLAMD_MAX_CONNECTIONS", "CLAMD_WAIT_TIMEOUT"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("bad %s: %v", name, err)
		}
	}
}
