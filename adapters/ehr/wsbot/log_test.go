package wsbot_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/wsbot"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

func TestClient_FailedCallLogsOneWarningWithoutPatientData(t *testing.T) {
	srv := wsbottest.Start(t)
	srv.SetDelay("patients.search", 2*time.Second)
	var (
		mu   sync.Mutex
		logs strings.Builder
	)
	c := newClient(t, srv.URL(), func(cfg *wsbot.Config) {
		cfg.CallTimeout = 100 * time.Millisecond
		cfg.Logger = slog.New(slog.NewJSONHandler(writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}), nil))
	})
	// A refusal is an answer, not a failure: no line.
	_, err := c.GetAppointment(t.Context(), "no-such-appointment")
	wantCode(t, "missing appointment", err, core.KindNotFound, "appointment_not_found")

	_, err = c.SearchPatients(t.Context(), ehr.PatientQuery{Text: "Zzmarkerfamily", BirthDate: "1911-11-11"})
	wantCode(t, "slow search", err, core.KindTimeout, "ehr_timeout")

	mu.Lock()
	out := logs.String()
	mu.Unlock()
	var warnings []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "wsbot call failed" {
			warnings = append(warnings, m)
		}
	}
	if len(warnings) != 1 {
		t.Fatalf("%d call failures logged, want 1: %s", len(warnings), out)
	}
	if w := warnings[0]; w["level"] != "WARN" || w["action"] != "patients.search" || w["code"] != "ehr_timeout" || w["duration_ms"] == nil {
		t.Errorf("log line %v", w)
	}
	for _, m := range []string{"Zzmarker", "zzmarker", "1911-11-11"} {
		if strings.Contains(out, m) {
			t.Errorf("the log holds %q: %s", m, out)
		}
	}
}
