package ehr

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/carebridge/carebridge/core"
)

// The Idempotency-Key of a booking: its outcome, the replay of it, the
// fingerprints that tell one request from another, and the resumption of
// a booking whose answer was lost.

// complete stores an Idempotency-Key's outcome (and, in the same
// transaction, what also writes, when set) and returns answer, the
// request's own result.
func (s *Scheduling) complete(ctx context.Context, subject, key string, out Outcome, also func(context.Context, Repos) error, answer error) error {
	err := s.tx.WithinTx(context.WithoutCancel(ctx), func(ctx context.Context, r Repos) error {
		if err := r.Idempotency.Complete(ctx, subject, key, out); err != nil || also == nil {
			return err
		}
		return also(ctx, r)
	})
	if err != nil {
		return fmt.Errorf("store idempotent outcome: %w", err)
	}
	return answer
}

// isFinal tells the failures a repeat must see again (the client's fault
// or a rule) from those worth retrying (upstream, internal). ErrAgentBusy
// is a conflict of the moment, not a rule: Book releases its key as well.
func isFinal(k core.Kind) bool {
	switch k {
	case core.KindInvalid, core.KindNotFound, core.KindConflict:
		return true
	}
	return false
}

// Outcome is what an Idempotency-Key keeps of its first answer: the EHR
// system and the appointment's id and status there (the appointment itself
// is read again from that EHR on a repeat), or the failure. It never holds
// patient data; the IdempotencyStore owns its encoding.
type Outcome struct {
	System        string // "": kept before outcomes recorded their system
	AppointmentID string
	Status        string
	Error         *OutcomeError // nil: the booking succeeded
}

// OutcomeError is the failure of a first answer, given again on a repeat:
// what the repeat's answer needs, its kind (the status), its code and the
// service's own message. An EHR's words never reach it: an adapter keeps
// them out of the messages of its refusals (they may name a patient).
type OutcomeError struct {
	Kind    core.Kind
	Code    string
	Message string
}

// outcomeError is the OutcomeError kept of failure ce.
func outcomeError(ce *core.Error) *OutcomeError {
	return &OutcomeError{Kind: ce.Kind, Code: ce.Code, Message: ce.Message}
}

// replay answers a repeated Idempotency-Key of business: the first failure
// again, or the appointment it booked as the EHR that holds it has it now.
func (s *Scheduling) replay(ctx context.Context, business string, out Outcome) (Booked, error) {
	if out.Error != nil {
		return Booked{Replayed: true}, &core.Error{Kind: out.Error.Kind, Code: out.Error.Code, Message: out.Error.Message}
	}
	if out.AppointmentID == "" {
		return Booked{}, errors.New("stored idempotent outcome is empty")
	}
	sch, err := s.ehrOf(out.System, business)
	if err != nil {
		return Booked{}, err
	}
	a, err := sch.GetAppointment(ctx, out.AppointmentID)
	if err != nil {
		return Booked{}, err
	}
	return Booked{Appointment: a, Replayed: true}, nil
}

// fingerprints identify a booking request, so a key reused for another
// request is told apart: one per fingerprint key, the current key's first.
// Each is an HMAC under the service's key: an unkeyed hash of a patient's
// details could be matched against guesses. The acting business is part of
// the request: a key used at one business is another request at the next.
func (s *Scheduling) fingerprints(subject, business string, r BookingRequest) []string {
	raw, _ := json.Marshal(newFingerprintForm(r)) // a struct of strings and ints always marshals
	fps := make([]string, len(s.fpKeys))
	for i, key := range s.fpKeys {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(subject))
		m.Write([]byte{0})
		m.Write(raw)
		if business != "" { // "" keeps the fingerprints made before businesses
			m.Write([]byte{0})
			m.Write([]byte(business))
		}
		fps[i] = hex.EncodeToString(m.Sum(nil))
	}
	return fps
}

// fingerprintForm is what a booking request's fingerprints hash: the JSON
// of the request with its times as the client sent them and no
// Idempotency-Key, the form of the request when its fields were all
// strings. Keys stored before stay matched only while it stays byte for
// byte the same (TestFingerprints_HashedFormIsPinned).
type fingerprintForm struct {
	AgentID         string
	Start           string
	End             string
	DurationMinutes int
	Reason          string
	LocationID      string
	Patient         fingerprintPatient
	IdempotencyKey  string // always ""
}

type fingerprintPatient struct {
	FirstName, LastName, DateOfBirth, Email, Phone string
}

func newFingerprintForm(r BookingRequest) fingerprintForm {
	p := r.Patient
	return fingerprintForm{AgentID: r.AgentID, Start: r.Start.text(), End: r.End.text(), DurationMinutes: r.DurationMinutes,
		Reason: r.Reason, LocationID: r.LocationID,
		Patient: fingerprintPatient{FirstName: p.FirstName, LastName: p.LastName, DateOfBirth: p.DateOfBirth, Email: p.Email, Phone: p.Phone}}
}

// resume answers a repeat of an Idempotency-Key whose first request has no
// outcome yet. When that booking's EHR call ended without an answer (or
// its instance died), the repeat takes its hold over: the appointment the
// hold's EHR holds under the hold's reference is recorded and answered,
// and when there is none it is booked now in that EHR, under the same
// reference. Otherwise the first request is still running.
func (s *Scheduling) resume(ctx context.Context, c requester, r BookingRequest) (Booked, error) {
	h, found, err := s.holds.Resume(ctx, c.Subject, r.IdempotencyKey, holdLease)
	if err != nil {
		return Booked{}, err
	}
	if found && h.Business != c.business {
		// The key's booking at another business: it stays that
		// business's, settled by the reconciler.
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		found = false
	}
	if !found {
		return Booked{}, ErrIdempotencyInProgress
	}
	sch, err := s.ehrOf(h.System, h.Business)
	if err != nil {
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		return Booked{}, err
	}
	a, err := s.appointment(r)
	if err != nil { // the fingerprint matched: not expected
		return Booked{}, err
	}
	booked, ok, err := sch.FindAppointment(ctx, Appointment{Ref: h.ID, AgentID: h.AgentID, Start: h.Start, End: h.End})
	switch {
	case err != nil:
		_ = s.holds.Unknown(context.WithoutCancel(ctx), h.ID, 0)
		return Booked{}, err
	case ok:
		return Booked{Appointment: booked}, s.settle(ctx, h, booked)
	}
	booked, err = s.create(ctx, sch, h, a)
	var ce *core.Error
	if err != nil && errors.As(err, &ce) && isFinal(ce.Kind) && !errors.Is(err, ErrAgentBusy) {
		return Booked{}, s.complete(ctx, h.Subject, h.IdempotencyKey, Outcome{Error: outcomeError(ce)}, nil, err)
	}
	if err != nil && !errors.Is(err, errOutcomeUnknown) {
		_ = s.idem.Release(context.WithoutCancel(ctx), h.Subject, h.IdempotencyKey)
	}
	return Booked{Appointment: booked}, err
}
