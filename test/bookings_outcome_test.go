package test

import (
	"context"
	"strings"
	"testing"

	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/wsbottest"
)

// Reproduced from outside: a bot refuses a booking in its own words, which
// may name a patient. The Idempotency-Key keeps what its replay needs —
// the status, the code and Carebridge's own message — never those words.
func TestBookings_ABotsRefusalTextIsNotKeptWithTheIdempotencyKey(t *testing.T) {
	w := newWorld(t)
	bot := wsbottest.Start(t)
	bot.AddAgent(drAna, workdays(5))
	const marker = "Zqrefusalmarker"
	bot.SetRefusal("appointments.create", "invalid", "patient "+marker+" (born 1950-01-01) is on the do-not-book list")
	s := w.start(func(c *app.Config) { c.EHR = integrationFile(t, "wsbot", bot.URL(), "") })
	tok := w.token("desk")

	book := func() response {
		return s.do("POST", "/appointment/customer", tok, strings.NewReader(slotAt("dr-ana", 9, 30)),
			"Content-Type", "application/json", "Idempotency-Key", "refused-k1")
	}
	first := book()
	if first.status != 400 || first.errorCode(t) != "validation_failed" {
		t.Fatalf("the refused booking: %d %s", first.status, first.body)
	}
	var outcome string
	if err := w.db.QueryRow(context.Background(), `SELECT outcome::text FROM idempotency_keys WHERE key = 'refused-k1'`).Scan(&outcome); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(outcome, marker) || strings.Contains(outcome, "1950") || !strings.Contains(outcome, "validation_failed") {
		t.Errorf("the Idempotency-Key's outcome %s; want the code and no word of the EHR's", outcome)
	}
	again := book()
	if again.status != 400 || again.errorCode(t) != "validation_failed" || again.header.Get("Idempotency-Replayed") != "true" || strings.Contains(string(again.body), marker) {
		t.Errorf("the replay: %d %v %s", again.status, again.header, again.body)
	}
}
