package wsbot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// A bot's refusal in its own words — which may name a patient — keeps its
// kind and code, and its message is the adapter's own: the message is
// shown to the caller and kept with an Idempotency-Key's outcome. The
// words stay in the cause, for the log.
func TestClient_ARefusalsMessageIsNeverTheBotsWords(t *testing.T) {
	srv := wsbottest.Start(t)
	agent := seedAgents(srv, 1)[0]
	c := newClient(t, srv.URL(), nil)
	const marker = "Zqbotwordsmarker"
	words := "patient " + marker + " (born 1950-01-01) may not be booked"
	for _, tc := range []struct {
		code       string
		kind       core.Kind
		want, text string
	}{
		{"invalid", core.KindInvalid, "validation_failed", "clinic-bot refused the request as invalid"},
		{"conflict", core.KindConflict, "ehr_conflict", "clinic-bot refused the request: it conflicts with the record's state"},
		{"quota_exceeded", core.KindBadGateway, "ehr_error", "clinic-bot failed with the error code quota_exceeded"},
		{"Not A Code: " + marker, core.KindBadGateway, "ehr_error", "clinic-bot failed with the error code unknown"},
	} {
		srv.SetRefusal("appointments.create", tc.code, words)
		_, err := c.CreateAppointment(t.Context(), ehr.Appointment{AgentID: agent, Start: future(9), End: future(10)})
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Kind != tc.kind || ce.Code != tc.want || ce.Message != tc.text {
			t.Errorf("refusal %q: %#v; want kind %d, code %s, message %q", tc.code, ce, tc.kind, tc.want, tc.text)
			continue
		}
		if !strings.Contains(err.Error(), marker) {
			t.Errorf("refusal %q: the cause %v lost the bot's words, which the log needs", tc.code, err)
		}
	}
}
