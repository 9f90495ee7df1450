package clamd

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestProbe_LogsTheVersionOnceUntilItChanges(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", always(behave))
	var buf bytes.Buffer
	c, err := New(f.config(), WithLog(slog.New(slog.NewJSONHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Probe(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], `"msg":"malware scanner answers","version":"`+testVersion+`"`) {
		t.Fatalf("logged %q, want the version once", lines)
	}
}

func TestProbe_FailsAndLogsNothingOnGarbage(t *testing.T) {
	checkNothingLeft(t)
	f := startFake(t, "tcp", always(answerGarbage))
	var buf bytes.Buffer
	c, err := New(f.config(), WithLog(slog.New(slog.NewJSONHandler(&buf, nil))))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Probe(t.Context()); err == nil {
		t.Fatal("Probe of a clamd answering garbage succeeded")
	}
	if buf.Len() != 0 {
		t.Fatalf("logged %q, want nothing", buf.String())
	}
}
