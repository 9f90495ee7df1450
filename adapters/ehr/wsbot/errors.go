package wsbot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
)

// protocolError maps a protocol error code to the Scheduler's errors. The
// bot's own words (pe.Message) go into no message: they may name a patient,
// and a message is shown to the caller and kept with an Idempotency-Key's
// outcome. They stay in the cause, for the log.
func (c *Client) protocolError(action string, pe *wireError) error {
	cause := &peerError{code: pe.Code, message: pe.Message}
	search := action == c.searchAction || action == actionSearchRecords
	switch {
	case pe.Code == "unknown_action" && action == actionSearchRecords:
		return &core.Error{Kind: core.KindBadGateway, Code: codeRecordTypeNotSupported,
			Message: c.name + " cannot search clinical records", Err: cause}
	case pe.Code == "unknown_action" && action == actionChanges:
		return ehr.ErrChangesNotSupported.Wrap(cause)
	case pe.Code == "unauthorized":
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unauthorized",
			Message: c.name + " refused the credentials", Err: cause}
	case pe.Code == "unknown_action":
		return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unknown_action",
			Message: fmt.Sprintf("%s does not support the action %q", c.name, clip(action)), Err: cause}
	case search:
		// The PatientSearcher port knows only upstream failures.
	case pe.Code == "not_found":
		switch action {
		case actionGetAgent, actionAvailability, actionCreate:
			return ehr.ErrAgentNotFound.Wrap(cause)
		case actionGetAppointment, actionCancel, actionReschedule:
			return ehr.ErrAppointmentNotFound.Wrap(cause)
		}
	case pe.Code == "agent_unavailable":
		return ehr.ErrAgentUnavailable.Wrap(cause)
	case pe.Code == "conflict":
		if action == actionCancel {
			return ehr.ErrAlreadyCancelled.Wrap(cause)
		}
		return &core.Error{Kind: core.KindConflict, Code: "ehr_conflict",
			Message: c.name + " refused the request: it conflicts with the record's state", Err: cause}
	case pe.Code == "invalid":
		return &core.Error{Kind: core.KindInvalid, Code: "validation_failed",
			Message: c.name + " refused the request as invalid", Err: cause}
	}
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_error",
		Message: c.name + " failed with the error code " + errorCode(pe.Code), Err: cause}
}

// errorCode is a bot's error code as a message may quote it: a protocol
// token (lower-case letters, digits and '_', at most 64), else "unknown".
func errorCode(code string) string {
	if code == "" || len(code) > 64 || strings.ContainsFunc(code, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) {
		return "unknown"
	}
	return code
}

func (c *Client) badAnswer(action, what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_bad_response",
		Message: fmt.Sprintf("%s sent an invalid answer to %s: %s", c.name, clip(action), what), Err: cause}
}

func (c *Client) unreachable(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindBadGateway, Code: "ehr_unreachable", Message: c.name + " " + what, Err: cause}
}

func (c *Client) timeoutError(what string, cause error) *core.Error {
	return &core.Error{Kind: core.KindTimeout, Code: "ehr_timeout", Message: c.name + " " + what, Err: cause}
}

func (c *Client) closedError() error {
	return uncounted(&core.Error{Kind: core.KindUnavailable, Code: "ehr_closed",
		Message: "the connection to " + c.name + " is closed"})
}

// contextError reports the end of a call's context: a time-out counts for
// the breaker, the caller's cancellation does not.
func (c *Client) contextError(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return c.timeoutError("did not answer in time", err)
	}
	return uncounted(&core.Error{Kind: core.KindTimeout, Code: "ehr_timeout",
		Message: "the request to " + c.name + " was cancelled", Err: err})
}

// judged is a failure the breaker is not to count as one: the EHR
// answered (ehrclient.Success: a protocol error, refused credentials), or
// it says nothing of the EHR's health (ehrclient.Ignore: the caller
// cancelled, the client closed, no credentials could be had, a failure
// counted once already). Any other error is the EHR's failure.
type judged struct {
	err error
	v   ehrclient.Verdict
}

func (j judged) Error() string { return j.err.Error() }
func (j judged) Unwrap() error { return j.err }

func healthy(err error) error   { return judged{err, ehrclient.Success} }
func uncounted(err error) error { return judged{err, ehrclient.Ignore} }

// verdict is the breaker's verdict on a call's error.
func verdict(err error) ehrclient.Verdict {
	if err == nil {
		return ehrclient.Success
	}
	if j, ok := err.(judged); ok {
		return j.v
	}
	return ehrclient.Failure
}

// bare strips the breaker's verdict from err.
func bare(err error) error {
	if j, ok := err.(judged); ok {
		return j.err
	}
	return err
}

// once marks err, counted already, as not to be counted again.
func once(err error) error {
	if _, ok := err.(judged); ok {
		return err
	}
	return uncounted(err)
}

// peerError is a protocol error as the EHR sent it (the cause, for logs).
type peerError struct{ code, message string }

func (e *peerError) Error() string {
	return fmt.Sprintf("peer error %s: %s", clip(e.code), clip(e.message))
}

// clip makes upstream text fit for an error message.
func clip(s string) string { return ehr.ClipText(s, maxDetail) }
