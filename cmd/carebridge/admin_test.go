package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/event"
)

// webhook-deliveries prints exactly the format it printed when the record
// carried its json tags in core/event: operators' scripts keep working.
func TestDeliveriesJSON_GoldenFormat(t *testing.T) {
	next := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	ds := []event.DeliveryRecord{
		{ID: 7, Subscription: "sub-1", EventID: "ev-1", Type: "appointment.booked", State: "pending", Attempts: 2,
			LastStatus: 503, LastError: "upstream <down>", NextAttemptAt: &next,
			OccurredAt: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), UpdatedAt: time.Date(2026, 1, 2, 3, 1, 0, 0, time.UTC)},
		{ID: 8, Subscription: "sub-1", EventID: "ev-2", Type: "appointment.cancelled", State: "delivered", Attempts: 1,
			OccurredAt: time.Date(2026, 1, 2, 4, 0, 0, 0, time.FixedZone("X", 3600)), UpdatedAt: time.Date(2026, 1, 2, 4, 0, 1, 0, time.UTC)},
	}
	const golden = `[{"id":7,"subscriptionId":"sub-1","eventId":"ev-1","type":"appointment.booked","state":"pending",` +
		`"attempts":2,"lastStatus":503,"lastError":"upstream \u003cdown\u003e","nextAttemptAt":"2026-01-02T03:04:05.6Z",` +
		`"occurredAt":"2026-01-02T03:00:00Z","updatedAt":"2026-01-02T03:01:00Z"},` +
		`{"id":8,"subscriptionId":"sub-1","eventId":"ev-2","type":"appointment.cancelled","state":"delivered",` +
		`"attempts":1,"nextAttemptAt":null,"occurredAt":"2026-01-02T04:00:00+01:00","updatedAt":"2026-01-02T04:00:01Z"}]` + "\n"
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(toDeliveriesJSON(ds)); err != nil || out.String() != golden {
		t.Fatalf("printed %s (%v)\nwant %s", out.String(), err, golden)
	}
	// The printed form reads back into the record, which prints the same.
	var back []deliveryJSON
	if err := json.Unmarshal([]byte(golden), &back); err != nil {
		t.Fatal(err)
	}
	if again, err := json.Marshal(back); err != nil || string(again)+"\n" != golden {
		t.Fatalf("read back and printed again: %s (%v)", again, err)
	}
	if out.Reset(); json.NewEncoder(&out).Encode(toDeliveriesJSON(nil)) != nil || out.String() != "[]\n" {
		t.Fatalf("no deliveries: %s", out.String())
	}
}
