package webhook

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Tolerance is how far a delivery's webhook-timestamp may be from the
// receiver's clock before Verify refuses it (replays of old deliveries).
const Tolerance = 5 * time.Minute

// ParseSecret decodes a secret as add-webhook prints it, "whsec_" and the
// base64 of the key bytes.
func ParseSecret(text string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(text), SecretPrefix)
	if !ok {
		return nil, errors.New("webhook: a secret starts with " + SecretPrefix)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) == 0 {
		return nil, errors.New("webhook: the secret after " + SecretPrefix + " is not base64")
	}
	return raw, nil
}

// Verify checks a delivery as a receiver gets it: its webhook-timestamp is
// within Tolerance of now, and one of the space-separated signatures of
// webhook-signature is the v1 signature of webhook-id, the timestamp and
// body under secret. It is what receivers written in Go can use (see
// docs/events.md), and what `carebridge dev-receiver` does.
func Verify(secret []byte, h http.Header, body []byte, now time.Time) error {
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return errors.New("webhook: missing webhook-id, webhook-timestamp or webhook-signature")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return errors.New("webhook: webhook-timestamp is not Unix seconds")
	}
	if d := now.Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return errors.New("webhook: webhook-timestamp is too far from now")
	}
	want := []byte(Sign(secret, id, ts, body))
	for _, sig := range strings.Fields(sigs) {
		if hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return errors.New("webhook: no valid signature")
}
