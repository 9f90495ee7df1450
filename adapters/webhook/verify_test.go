package webhook_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/webhook"
)

func TestVerify(t *testing.T) {
	text, raw := webhook.NewSecret()
	secret, err := webhook.ParseSecret(text)
	if err != nil || string(secret) != string(raw) {
		t.Fatalf("ParseSecret(%q) = %x, %v", text, secret, err)
	}
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"evt_1","type":"blob.deleted"}`)
	header := func(id string, ts time.Time, sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
		h.Set("webhook-signature", sig)
		return h
	}
	good := webhook.Sign(secret, "evt_1", now.Unix(), body)
	_, other := webhook.NewSecret()
	tests := []struct {
		name string
		h    http.Header
		body []byte
		ok   bool
	}{
		{"signed", header("evt_1", now, good), body, true},
		{"among several", header("evt_1", now, "v1,AAAA "+good), body, true},
		{"four minutes old", header("evt_1", now.Add(-4*time.Minute), webhook.Sign(secret, "evt_1", now.Add(-4*time.Minute).Unix(), body)), body, true},
		{"body changed", header("evt_1", now, good), []byte(`{"id":"evt_1","type":"blob.uploaded"}`), false},
		{"id changed", header("evt_2", now, good), body, false},
		{"other secret", header("evt_1", now, webhook.Sign(other, "evt_1", now.Unix(), body)), body, false},
		{"too old", header("evt_1", now.Add(-6*time.Minute), webhook.Sign(secret, "evt_1", now.Add(-6*time.Minute).Unix(), body)), body, false},
		{"from the future", header("evt_1", now.Add(6*time.Minute), webhook.Sign(secret, "evt_1", now.Add(6*time.Minute).Unix(), body)), body, false},
		{"no signature", header("evt_1", now, ""), body, false},
		{"v2 label", header("evt_1", now, "v2,"+good[3:]), body, false},
	}
	for _, tt := range tests {
		err := webhook.Verify(secret, tt.h, tt.body, now)
		if (err == nil) != tt.ok {
			t.Errorf("%s: Verify = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
	for _, bad := range []string{"", "whsec_", "whsec_!!!", "sk_abc"} {
		if _, err := webhook.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
}
