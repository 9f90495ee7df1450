package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/auth"
)

func TestDevKeyFile_IsInTheUserConfigDirectory(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"home", map[string]string{"HOME": "/home/ana"}, "/home/ana/.config/carebridge/dev-signing-key.pem"},
		{"xdg config home", map[string]string{"HOME": "/home/ana", "XDG_CONFIG_HOME": "/cfg"}, "/cfg/carebridge/dev-signing-key.pem"},
		{"relative xdg is ignored", map[string]string{"HOME": "/home/ana", "XDG_CONFIG_HOME": "cfg"}, "/home/ana/.config/carebridge/dev-signing-key.pem"},
		{"DEV_KEY_FILE overrides", map[string]string{"HOME": "/home/ana", "XDG_CONFIG_HOME": "/cfg", "DEV_KEY_FILE": "/keys/dev.pem"}, "/keys/dev.pem"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := devKeyFile(envOf(tt.env))
			if err != nil || got != tt.want {
				t.Fatalf("devKeyFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDevKeyFile_WithoutHomeAsksForDevKeyFile(t *testing.T) {
	err := run(context.Background(), []string{"dev-token", "--sub", "alice"}, envOf(nil), nil, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "DEV_KEY_FILE") || !strings.Contains(err.Error(), "HOME") {
		t.Fatalf("dev-token without HOME or DEV_KEY_FILE: %v", err)
	}
	_, _, err = loadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "AUTH_DEV_MODE": "true", "HTTP_ADDR": "127.0.0.1:8080"}))
	if err == nil || !strings.Contains(err.Error(), "DEV_KEY_FILE") {
		t.Fatalf("serve without HOME or DEV_KEY_FILE: %v", err)
	}
}

// A token minted in one folder is accepted by a service started in another:
// the key's place does not depend on the working directory.
func TestRun_DevTokenFromAnyFolderIsAcceptedByServe(t *testing.T) {
	home := t.TempDir()
	e := envOf(map[string]string{"HOME": home, "DATABASE_URL": "postgres://x", "AUTH_DEV_MODE": "true", "HTTP_ADDR": "127.0.0.1:8080"})
	mint := func(sub string) string {
		t.Helper()
		t.Chdir(t.TempDir())
		var out bytes.Buffer
		if err := run(context.Background(), []string{"dev-token", "--sub", sub}, e, nil, &out); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("data"); err == nil {
			t.Error("dev-token wrote ./data in the working directory")
		}
		return strings.TrimSpace(out.String())
	}
	tokens := map[string]string{"alice": mint("alice"), "bob": mint("bob")}

	keyFile := filepath.Join(home, ".config", "carebridge", "dev-signing-key.pem")
	info, err := os.Stat(keyFile)
	if err != nil {
		t.Fatalf("no key in the config directory: %v", err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("key mode %04o, want 0600", perm)
	}

	t.Chdir(t.TempDir()) // serve starts in a third folder
	cfg, _, err := loadConfig(e)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewDev(cfg.DevKey, cfg.OIDCAudience)
	if err != nil {
		t.Fatal(err)
	}
	for sub, token := range tokens {
		actor, err := v.Authenticate(context.Background(), token)
		if err != nil || actor.Subject != sub {
			t.Errorf("token for %s minted in another folder: %+v, %v", sub, actor, err)
		}
	}

	// The key's checks still hold at the new place.
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"dev-token", "--sub", "alice"}, e, nil, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("a key readable by others was used: %v", err)
	}
}
