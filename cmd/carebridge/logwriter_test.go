package main

import (
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/test/logtest"
)

func TestLogWriter_FlushesOnTheTickAndOnClose(t *testing.T) {
	var out logtest.Buffer
	w := newLogWriter(&out, 20*time.Millisecond)
	w.Write([]byte("first\n"))
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "first\n" {
		if time.Now().After(deadline) {
			t.Fatal("a buffered line was not flushed on the tick")
		}
		time.Sleep(5 * time.Millisecond)
	}
	w = newLogWriter(&out, time.Hour)
	w.Write([]byte("last\n"))
	w.Close()
	if !strings.HasSuffix(out.String(), "last\n") {
		t.Fatalf("Close lost a line: %q", out.String())
	}
}
