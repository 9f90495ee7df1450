package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
)

// The lines webhook-deliveries prints are read by operators' scripts: the
// golden lines pin them.
func TestDeliveryJSON_IsTheCLIsFormat(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 123_000_000, time.UTC)
	next := at.Add(time.Minute)
	tests := []struct {
		name string
		r    event.DeliveryRecord
		want string
	}{
		{"pending", event.DeliveryRecord{ID: 7, Subscription: "sub-1", EventID: "evt_1", Type: core.BlobUploaded, State: event.Pending,
			Attempts: 2, LastStatus: 503, LastError: "status 503", NextAttemptAt: &next, OccurredAt: at, UpdatedAt: at},
			`{"id":7,"subscriptionId":"sub-1","eventId":"evt_1","type":"blob.uploaded","state":"pending","attempts":2,` +
				`"lastStatus":503,"lastError":"status 503","nextAttemptAt":"2026-03-04T05:07:07.123Z","occurredAt":"2026-03-04T05:06:07.123Z","updatedAt":"2026-03-04T05:06:07.123Z"}`},
		{"delivered", event.DeliveryRecord{ID: 8, Subscription: "sub-1", EventID: "evt_2", Type: core.BusinessUpdated, State: event.Delivered,
			Attempts: 1, OccurredAt: at, UpdatedAt: at},
			`{"id":8,"subscriptionId":"sub-1","eventId":"evt_2","type":"business.updated","state":"delivered","attempts":1,` +
				`"nextAttemptAt":null,"occurredAt":"2026-03-04T05:06:07.123Z","updatedAt":"2026-03-04T05:06:07.123Z"}`},
	}
	for _, tt := range tests {
		got, err := json.Marshal(toDeliveryJSON(tt.r))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("%s:\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
}
