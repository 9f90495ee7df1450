package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/webhook"
)

// lockedBuffer is a bytes.Buffer safe for the receiver and the test.
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

func TestDevReceiver_PrintsVerifiedEventsAndRefusesOthers(t *testing.T) {
	text, secret := webhook.NewSecret()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out lockedBuffer
	done := make(chan error, 1)
	go func() { done <- devReceiver(ctx, []string{"--addr", addr, "--secret", text}, &out) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("dev-receiver: %v", err)
		}
	}()

	post := func(body, sig string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader(body))
		req.Header.Set("webhook-id", "evt_1")
		req.Header.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
		req.Header.Set("webhook-signature", sig)
		for range 50 { // until it listens
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(20 * time.Millisecond)
			req.Body, _ = req.GetBody()
		}
		t.Fatal("dev-receiver does not answer")
		return 0
	}
	good := `{"id":"evt_1","type":"business.updated"}`
	if got := post(good, webhook.Sign(secret, "evt_1", time.Now().Unix(), []byte(good))); got != http.StatusNoContent {
		t.Fatalf("signed delivery: %d", got)
	}
	forged := `{"id":"evt_1","type":"blob.deleted"}`
	if got := post(forged, webhook.Sign(secret, "evt_1", time.Now().Unix(), []byte(good))); got != http.StatusUnauthorized {
		t.Fatalf("forged delivery: %d", got)
	}
	if got := out.String(); got != good+"\n" {
		t.Fatalf("printed %q, want only the verified event", got)
	}
	if err := devReceiver(ctx, []string{"--secret", "nope"}, &out); err == nil || !strings.Contains(err.Error(), "--secret") {
		t.Fatalf("a bad secret: %v", err)
	}
}
