package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/adapters/ehr/ehrconfig"
)

type fakeReloader struct {
	got   []*ehrconfig.Config
	fails error
}

func (f *fakeReloader) ReloadEHR(cfg *ehrconfig.Config) error {
	f.got = append(f.got, cfg)
	return f.fails
}

func TestReloadEHR_ReadsTheFileAsStartUpDoesAndLogsTheSystems(t *testing.T) {
	credKey := bytes.Repeat([]byte{7}, 32)
	secret, err := ehrconfig.EncryptSecret(credKey, "reload-secret-3b1f9c")
	if err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/ehr.yaml"
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', authentication: {type: api_key, api_key: " + secret + "}}\n" +
		"  - {name: b, adapter: fhir, base_url: 'http://127.0.0.1:2/fhir', businesses: [6f1c2a3e-0000-4000-8000-00000000000a]}\nintegration: {ehr: a}\n")
	getenv := envOf(map[string]string{"EHR_CONFIG": file, "EHR_CREDENTIALS_KEY": hex.EncodeToString(credKey)})
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	var a fakeReloader

	reloadEHR(getenv, &a, log)
	if len(a.got) != 1 || len(a.got[0].Systems) != 2 || a.got[0].Systems[0].Auth.APIKey.Value() != "reload-secret-3b1f9c" {
		t.Fatalf("reloaded %+v", a.got)
	}
	if line := logs.String(); !strings.Contains(line, `"level":"INFO"`) || !strings.Contains(line, `"systems":["a","b"]`) ||
		strings.Count(line, "\n") != 1 || strings.Contains(line, "reload-secret-3b1f9c") {
		t.Fatalf("log %s", line)
	}

	// A file that does not validate is refused: not handed over, one ERROR line.
	logs.Reset()
	write("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir', businesses: [not-a-uuid]}\nintegration: {ehr: a, by_business: {6f1c2a3e-0000-4000-8000-00000000000a: nowhere}}\n")
	reloadEHR(getenv, &a, log)
	line := logs.String()
	if len(a.got) != 1 || !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "not-a-uuid") ||
		!strings.Contains(line, "nowhere") || strings.Count(line, "\n") != 1 {
		t.Fatalf("invalid file: handed over %d times; log %s", len(a.got), line)
	}

	// The app refusing it (a system it cannot build) is logged the same way.
	logs.Reset()
	write("ehr_systems:\n  - {name: a, adapter: fhir, base_url: 'http://127.0.0.1:1/fhir'}\n")
	a.fails = errors.New("system a: cannot build")
	reloadEHR(getenv, &a, log)
	if line := logs.String(); !strings.Contains(line, `"level":"ERROR"`) || !strings.Contains(line, "cannot build") {
		t.Fatalf("log %s", line)
	}
}

func TestReloadEHR_WithoutEHRConfigChangesNothing(t *testing.T) {
	var logs bytes.Buffer
	var a fakeReloader
	reloadEHR(envOf(nil), &a, slog.New(slog.NewJSONHandler(&logs, nil)))
	if len(a.got) != 0 || !strings.Contains(logs.String(), "EHR_CONFIG is not set") {
		t.Fatalf("handed over %d; log %s", len(a.got), logs.String())
	}
}
