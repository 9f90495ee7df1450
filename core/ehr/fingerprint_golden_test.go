package ehr

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// The Idempotency-Key fingerprint hashes a fixed form of the booking
// request: stored keys stay matched only while that form stays byte for
// byte what it was (the times as the client sent them).
func TestFingerprints_HashedFormIsPinned(t *testing.T) {
	key := []byte("golden fingerprint key, 32 bytes")
	s := &Scheduling{fpKeys: [][]byte{key}}
	r := request("2030-03-04T09:00:00-06:00", "2030-03-04T09:30:00.000-06:00")
	r.LocationID, r.DurationMinutes, r.IdempotencyKey = "main", 0, "golden-key-1"
	r.Patient.Phone = "+1 312 555 0100"
	r.Reason = "check-up & <follow>"
	const form = `{"AgentID":"dr-1","Start":"2030-03-04T09:00:00-06:00","End":"2030-03-04T09:30:00.000-06:00",` +
		`"DurationMinutes":0,"Reason":"check-up \u0026 \u003cfollow\u003e","LocationID":"main",` +
		`"Patient":{"FirstName":"Ana","LastName":"Lopez","DateOfBirth":"1980-02-01","Email":"ana@example.com","Phone":"+1 312 555 0100"},` +
		`"IdempotencyKey":""}`
	for _, tt := range []struct{ business, want string }{
		{"", "7413083a1206cf761a7c8a3a2e3f9dd975012f6f16242b7f099b5d2b1b8b3737"},
		{"6f1c2d3e-0000-4000-8000-000000000001", "2cffd9aa6d73966ec8c56ce4a04c557422da6db59f3089091440a822d5a3f228"},
	} {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("subject-1\x00" + form))
		if tt.business != "" {
			m.Write([]byte("\x00" + tt.business))
		}
		if got := s.fingerprints("subject-1", tt.business, r)[0]; got != hex.EncodeToString(m.Sum(nil)) || got != tt.want {
			t.Errorf("business %q: fingerprint %s, want %s (the form %s)", tt.business, got, tt.want, form)
		}
	}
}
