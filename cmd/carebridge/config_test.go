package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

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
	if cfg.HTTPAddr != ":8080" || cfg.StorageURL != "file://./data/blobs" || cfg.MaxUploadBytes != 104857600 || cfg.EncryptionKey != nil || cfg.DevKey != nil ||
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
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	line := oneLine(err)
	for _, v := range []string{"DATABASE_URL", "CLOUD_STORAGE_CONNECTION_STRING", "CLOUD_STORAGE_ENCRYPTION_KEY:", "CLOUD_STORAGE_PREVIOUS_KEYS",
		"MAX_UPLOAD_BYTES", "DOWNLOAD_READAHEAD_BYTES", "CORS_ALLOWED_ORIGINS", "LOG_LEVEL", "AUTH_DEV_MODE", "OIDC_ISSUER_URL", "OIDC_AUDIENCE"} {
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
	if len(cfg.EncryptionKey) != 32 || len(cfg.PreviousKeys["old"]) != 32 || len(cfg.CORSAllowedOrigins) != 2 {
		t.Fatalf("%+v", cfg)
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
	bad := map[string]string{"SEARCH_CACHE_TTL": "soon", "SEARCH_RATE_LIMIT": "-1", "REDIS_URL": "redis://127.0.0.1:6379", "EHR_CONFIG": "/does/not/exist.yaml"}
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

func TestLoadConfig_IdempotencyKey(t *testing.T) {
	key := strings.Repeat("ab", 32)
	withCred, err := loadConfigOnly(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"EHR_CREDENTIALS_KEY": key}))
	if err != nil || len(withCred.IdempotencyKey) != 32 {
		t.Fatalf("with EHR_CREDENTIALS_KEY: %v %d", err, len(withCred.IdempotencyKey))
	}
	withBlob, err := loadConfigOnly(envOf(map[string]string{"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
		"CLOUD_STORAGE_ENCRYPTION_KEY": key}))
	if err != nil || len(withBlob.IdempotencyKey) != 32 || bytes.Equal(withBlob.IdempotencyKey, withBlob.EncryptionKey) {
		t.Fatalf("with the blob key: %v, a derived key of %d bytes", err, len(withBlob.IdempotencyKey))
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
	cred, blob := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	// The service and the admin CLI derive the same webhook key, from the
	// EHR credentials key first.
	for _, e := range []env{with("EHR_CREDENTIALS_KEY", cred, "CLOUD_STORAGE_ENCRYPTION_KEY", blob), with("CLOUD_STORAGE_ENCRYPTION_KEY", blob)} {
		cfg, err := loadConfigOnly(e)
		if err != nil {
			t.Fatal(err)
		}
		cli, err := webhookKey(e)
		if err != nil || len(cfg.WebhookKey) != 32 || !bytes.Equal(cfg.WebhookKey, cli) ||
			bytes.Equal(cfg.WebhookKey, cfg.IdempotencyKey) || bytes.Equal(cfg.WebhookKey, cfg.EncryptionKey) {
			t.Fatalf("webhook key: service %x, CLI %x (%v)", cfg.WebhookKey, cli, err)
		}
	}
	a, _ := webhookKey(with("EHR_CREDENTIALS_KEY", cred))
	b, _ := webhookKey(with("CLOUD_STORAGE_ENCRYPTION_KEY", cred))
	if !bytes.Equal(a, b) {
		t.Fatal("the same key material gives another webhook key")
	}
	if _, err := webhookKey(with()); err == nil || !strings.Contains(err.Error(), "EHR_CREDENTIALS_KEY") {
		t.Fatalf("no key material: %v", err)
	}
	if cfg, err := loadConfigOnly(with()); err != nil || cfg.WebhookKey != nil {
		t.Fatalf("without key material the service runs without a webhook key: %v", err)
	}

	cfg, err := loadConfigOnly(with("EVENTS_NATS_URL", "nats://127.0.0.1:4222,tls://nats-2:4222"))
	if err != nil || cfg.EventsNATSURL != "nats://127.0.0.1:4222,tls://nats-2:4222" {
		t.Fatalf("EVENTS_NATS_URL: %q %v", cfg.EventsNATSURL, err)
	}
	if _, err := loadConfigOnly(with("EVENTS_NATS_URL", "http://127.0.0.1:4222")); err == nil || !strings.Contains(err.Error(), "EVENTS_NATS_URL") {
		t.Fatalf("an http URL for NATS: %v", err)
	}
}
