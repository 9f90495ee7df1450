package wsbot

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"time"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
	"github.com/carebridge/carebridge/core/ehr"
)

// The change feed (ehr.ChangeFeed): the later action appointments.changes.

const actionChanges = "appointments.changes"

var _ ehr.ChangeFeed = (*Client)(nil)

type (
	changesPayload struct {
		Since string `json:"since,omitempty"`
	}
	wireChanges struct {
		Items []json.RawMessage `json:"items"`
	}
)

// AppointmentChanges asks appointments.changes {since} (RFC 3339 with
// nanoseconds; no since for the zero time) and returns the appointments
// it answers, oldest first by updatedAt, at most limit (see
// ehrclient.CutChanges for the one exception: more than limit changes of
// one instant), with more when it left some out.
//
// The bot answers every change after since at once; the ones past limit
// are not kept here: the caller asks again from the last one's UpdatedAt
// and the bot answers them (and any newer) again. Items at or before
// since are left out.
//
// Each item is read as appointments.get's answer (Ref is its externalId
// when that is not its id: the booking reference Carebridge sent), with
// Version its updatedAt (RFC 3339, UTC, nanoseconds). An item without an
// id, a valid updatedAt, start and end (start before end), agentId or
// known status is left out and logged (its id and why, nothing about the
// patient), so it never blocks the feed. A bot without the action (it
// answers unknown_action) fails with ehr.ErrChangesNotSupported.
//
// The protocol does not tell the bot's clock: the batch's Clock is zero,
// and the poller bounds the watermark by its own clock.
func (c *Client) AppointmentChanges(ctx context.Context, since time.Time, limit int) (ehr.ChangeBatch, error) {
	var res wireChanges
	if err := c.call(ctx, actionChanges, changesPayload{Since: formatTime(since)}, &res); err != nil {
		return ehr.ChangeBatch{}, err
	}
	out := make([]ehr.AppointmentChange, 0, len(res.Items))
	for _, raw := range res.Items {
		ch, ok := c.change(raw)
		if ok && ch.Appointment.UpdatedAt.After(since) {
			out = append(out, ch)
		}
	}
	ehrclient.SortChanges(out)
	cut, more := ehrclient.CutChanges(out, limit)
	return ehr.ChangeBatch{Changes: cut, More: more}, nil
}

// change reads one item of appointments.changes; false (and a log line)
// when it is unusable.
func (c *Client) change(raw json.RawMessage) (ehr.AppointmentChange, bool) {
	var w wireAppointment
	if err := json.Unmarshal(raw, &w); err != nil {
		var id struct {
			ID any `json:"id"`
		}
		_ = json.Unmarshal(raw, &id)
		idText, _ := id.ID.(string)
		c.skipChange(idText, "the item is malformed")
		return ehr.AppointmentChange{}, false
	}
	why := ""
	if _, ok := statusFromWire(w.Status); !ok {
		why = "no known status"
	}
	a, err := appointmentFromWire(w, c.name, slog.New(slog.DiscardHandler))
	switch {
	case strings.TrimSpace(w.ID) == "":
		why = "no id"
	case err != nil:
		why = "a time is not RFC 3339"
	case a.UpdatedAt.IsZero():
		why = "no updatedAt"
	case a.Start.IsZero() || !a.End.After(a.Start):
		why = "no start before its end"
	case a.AgentID == "":
		why = "no agentId"
	}
	if why != "" {
		c.skipChange(w.ID, why)
		return ehr.AppointmentChange{}, false
	}
	if w.ExternalID != "" && w.ExternalID != w.ID {
		a.Ref = w.ExternalID // the booking reference Carebridge sent
	}
	return ehr.AppointmentChange{Appointment: a, Version: a.UpdatedAt.UTC().Format(time.RFC3339Nano)}, true
}

// skipChange logs an item of appointments.changes left out: its id and
// why, never its patient.
func (c *Client) skipChange(id, why string) {
	c.log.Warn("wsbot: appointment change skipped", slog.String("appointment", clipN(id, 64)), slog.String("reason", why))
}
