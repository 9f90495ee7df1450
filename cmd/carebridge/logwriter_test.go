package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestLogWriter_FlushesOnTheTickAndOnClose(t *testing.T) {
	var out lockedBuffer
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
