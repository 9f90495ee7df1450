package postgres

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

// The golden bodies below are the contract's webhook body: rows already in
// the outbox were written in this form and are sent as stored.

var at = time.Date(2026, 3, 4, 5, 6, 7, 123_000_000, time.UTC)

func TestEventBody_IsTheContractsJSON(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name string
		e    core.Event
		want string
	}{
		{"appointment", core.AppointmentEvent(core.AppointmentBooked, core.OriginAPI, "apt-1", "agent-2", "booked",
			time.Date(2026, 5, 1, 10, 0, 0, 0, cet), time.Date(2026, 5, 1, 10, 30, 0, 0, cet), ""),
			`{"id":"evt_1","type":"appointment.booked","occurredAt":"2026-03-04T05:06:07.123Z","businessId":null,` +
				`"data":{"appointmentId":"apt-1","agentId":"agent-2","status":"booked","start":"2026-05-01T09:00:00Z","end":"2026-05-01T09:30:00Z","origin":"api"}}`},
		{"appointment of a business", core.AppointmentEvent(core.AppointmentCancelled, core.OriginEHR, "apt-1", "agent-2", "cancelled",
			time.Date(2026, 5, 1, 10, 0, 0, 0, cet), time.Date(2026, 5, 1, 10, 30, 0, 0, cet), "biz-1"),
			`{"id":"evt_1","type":"appointment.cancelled","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-1",` +
				`"data":{"appointmentId":"apt-1","agentId":"agent-2","status":"cancelled","start":"2026-05-01T09:00:00Z","end":"2026-05-01T09:30:00Z","origin":"ehr"}}`},
		{"blob with location", core.BlobEvent(core.BlobUploaded, 42, "scans", "17", "biz-1"),
			`{"id":"evt_1","type":"blob.uploaded","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-1",` +
				`"data":{"blobId":42,"containerName":"scans","businessLocationId":"17"}}`},
		{"blob without location", core.BlobEvent(core.BlobDeleted, 7, "misc", "", ""),
			`{"id":"evt_1","type":"blob.deleted","occurredAt":"2026-03-04T05:06:07.123Z","businessId":null,` +
				`"data":{"blobId":7,"containerName":"misc","businessLocationId":null}}`},
		{"location", core.LocationEvent(core.LocationCreated, 9, "biz-2"),
			`{"id":"evt_1","type":"location.created","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-2","data":{"locationId":9}}`},
		{"hours", core.LocationEvent(core.OperatingHoursChanged, 9, "biz-2"),
			`{"id":"evt_1","type":"operating_hours.changed","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-2","data":{"locationId":9}}`},
		{"business", core.BusinessEvent("biz-3"),
			`{"id":"evt_1","type":"business.updated","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-3","data":{"businessId":"biz-3"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.ID, e.OccurredAt = "evt_1", at.In(cet)
			got, err := eventBody(e)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("eventBody() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestEventBody_OccurredAtIsRFC3339(t *testing.T) {
	e := core.BusinessEvent("b")
	e.OccurredAt = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	got, err := eventBody(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"occurredAt":"2026-03-04T05:06:07Z"`) {
		t.Errorf("eventBody() = %s", got)
	}
	m := regexp.MustCompile(`"occurredAt":"([^"]*)"`).FindSubmatch(got)
	if _, err := time.Parse(time.RFC3339, string(m[1])); err != nil {
		t.Errorf("occurredAt %s: %v", m[1], err)
	}
}

func TestEventBody_RejectsNoData(t *testing.T) {
	if b, err := eventBody(core.NewEvent(core.BusinessUpdated, "", nil)); err == nil {
		t.Errorf("eventBody() of no data = %s, want an error", b)
	}
}
