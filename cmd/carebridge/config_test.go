package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func envOf(m map[string]string) env { return func(k string) string { return m[k] } }

func TestLoadConfig_Defaults(t *testing.T) {
	cfg, _, err := loadConfig(envOf(map[string]string{
		"DATABASE_URL": "postgres://x", "OIDC_ISSUER_URL": "https://id.example", "OIDC_AUDIENCE": "cb",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HTTPAddr != ":8080" || cfg.StorageURL != "file://./data/blobs" || cfg.MaxUploadBytes != 104857600 || cfg.EncryptionKey != nil || cfg.DevKey != nil {
		t.Fatalf("defaults %+v", cfg)
	}
}

func TestLoadConfig_ReportsEveryBadVariableOnOneLine(t *testing.T) {
	_, _, err := loadConfig(envOf(map[string]string{
		"CLOUD_STORAGE_CONNECTION_STRING": "ftp://x",
		"CLOUD_STORAGE_ENCRYPTION_KEY":    "too-short",
		"CLOUD_STORAGE_PREVIOUS_KEYS":     "k1",
		"MAX_UPLOAD_BYTES":                "-5",
		"CORS_ALLOWED_ORIGINS":            "*",
		"LOG_LEVEL":                       "loud",
		"AUTH_DEV_MODE":                   "maybe",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	line := oneLine(err)
	for _, v := range []string{"DATABASE_URL", "CLOUD_STORAGE_CONNECTION_STRING", "CLOUD_STORAGE_ENCRYPTION_KEY:", "CLOUD_STORAGE_PREVIOUS_KEYS",
		"MAX_UPLOAD_BYTES", "CORS_ALLOWED_ORIGINS", "LOG_LEVEL", "AUTH_DEV_MODE", "OIDC_ISSUER_URL", "OIDC_AUDIENCE"} {
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
	if err := run(context.Background(), []string{"dev-token", "--sub", "alice"}, e, &out); err != nil {
		t.Fatal(err)
	}
	if parts := strings.Split(strings.TrimSpace(out.String()), "."); len(parts) != 3 {
		t.Fatalf("not a JWT: %q", out.String())
	}
	if err := run(context.Background(), []string{"dev-token"}, e, &out); err == nil {
		t.Fatal("dev-token without --sub accepted")
	}
	if err := run(context.Background(), []string{"frobnicate"}, e, &out); err == nil {
		t.Fatal("unknown command accepted")
	}
}
