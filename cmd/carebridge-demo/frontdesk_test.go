package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `carebridge-demo front-desk` refuses what it cannot do with one line
// naming the problem, before it reaches any EHR.
func TestFrontDesk_BadInput(t *testing.T) {
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	withKey := t.TempDir()
	if err := os.WriteFile(filepath.Join(withKey, "credentials.key"), []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badKey := t.TempDir()
	if err := os.WriteFile(filepath.Join(badKey, "credentials.key"), []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, envKey string
		args         []string
		want         string
	}{
		{"no change named", "", []string{"--dir", withKey}, "name one change"},
		{"two changes", "", []string{"--dir", withKey, "book", "cancel"}, "name one change"},
		{"an unknown flag", "", []string{"--nope", "book"}, "flag provided but not defined"},
		{"no key anywhere", "", []string{"--dir", t.TempDir(), "book"}, "credentials.key"},
		{"a bad key file", "", []string{"--dir", badKey, "book"}, "credentials.key"},
		{"a bad EHR_CREDENTIALS_KEY", "short", []string{"--dir", withKey, "book"}, "EHR_CREDENTIALS_KEY"},
		{"no demo running (no ehr.yaml)", "", []string{"--dir", withKey, "book"}, "ehr.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("EHR_CREDENTIALS_KEY", tc.envKey)
			err := run(t.Context(), append([]string{"front-desk"}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("front-desk %v: %v, want an error naming %q", tc.args, err, tc.want)
			}
		})
	}
}
