package ehr

import (
	"errors"
	"testing"
)

// After a rotation of the service keys (the new key first, the old one
// kept), an Idempotency-Key claimed under the old key still replays, and a
// new claim is fingerprinted under the new key.
func TestBook_IdempotencyKeyReplaysAcrossAKeyRotation(t *testing.T) {
	oldKey, newKey := []byte("old fingerprint key, 32 bytes..."), []byte("new fingerprint key, 32 bytes...")
	c := newCalendar(chicago)
	before := schedulingWith(c, SchedulingConfig{FingerprintKeys: [][]byte{oldKey}})
	idem := before.idem.(*IdempotencyStoreMock)
	with := func(keys ...[]byte) *Scheduling {
		s := NewScheduling(FixedSystems{SchedulingName: "test", SchedulingEHR: c}, before.holds, idem, before.bookings, before.counter, before.tx, SchedulingConfig{FingerprintKeys: keys})
		s.now = before.now
		return s
	}
	r := request("2030-03-04T13:00:00-06:00", "2030-03-04T13:30:00-06:00")
	r.IdempotencyKey = "rotation-key-1"
	first, err := before.Book(caller("u"), r)
	if err != nil {
		t.Fatal(err)
	}

	after := with(newKey, oldKey)
	again, err := after.Book(caller("u"), r)
	if err != nil || !again.Replayed || again.Appointment.ID != first.Appointment.ID {
		t.Fatalf("replay after the rotation: %+v %v", again, err)
	}
	if n := len(c.CreateAppointmentCalls()); n != 1 {
		t.Fatalf("%d bookings in the EHR, want 1", n)
	}
	// Another request under the same key is still told apart.
	other := r
	other.Reason = "another reason"
	if _, err := after.Book(caller("u"), other); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Fatalf("another request under the key: %v", err)
	}

	// A new key is fingerprinted under the new service key, first.
	r = request("2030-03-04T14:00:00-06:00", "2030-03-04T14:30:00-06:00")
	r.IdempotencyKey = "rotation-key-2"
	if _, err := after.Book(caller("u"), r); err != nil {
		t.Fatal(err)
	}
	calls := idem.ClaimCalls()
	fps := calls[len(calls)-1].Fingerprints
	onlyNew := with(newKey)
	if len(fps) != 2 || fps[0] != onlyNew.fingerprints("u", "", r)[0] || fps[1] != before.fingerprints("u", "", r)[0] {
		t.Fatalf("fingerprints %v: want the new key's, then the old key's", fps)
	}
}
