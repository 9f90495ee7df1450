package event

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core"
)

func TestParseTypes_AcceptsListsAndAll(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"*", []string{"*"}},
		{" * ", []string{"*"}},
		{"blob.uploaded", []string{"blob.uploaded"}},
		{" appointment.booked , blob.deleted ,business.updated", []string{"appointment.booked", "blob.deleted", "business.updated"}},
		{"blob.uploaded,blob.uploaded, blob.uploaded ,location.created", []string{"blob.uploaded", "location.created"}},
		{"operating_hours.changed", []string{"operating_hours.changed"}},
	}
	for _, tt := range tests {
		got, err := ParseTypes(tt.in)
		if err != nil {
			t.Errorf("ParseTypes(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("ParseTypes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseTypes_RejectsUnknownEmptyAndMixedAll(t *testing.T) {
	tests := []struct {
		in      string
		mention string // what the message must name, besides the known types
	}{
		{"blob.created", `"blob.created"`},
		{"blob.uploaded, nope", `"nope"`},
		{"", ""},
		{"   ", ""},
		{"blob.uploaded,,blob.deleted", ""},
		{"blob.uploaded,", ""},
		{"*,blob.uploaded", `"*"`},
		{"blob.uploaded, *", `"*"`},
		{"**", `"**"`},
		{"BLOB.UPLOADED", `"BLOB.UPLOADED"`},
	}
	for _, tt := range tests {
		got, err := ParseTypes(tt.in)
		if err == nil {
			t.Errorf("ParseTypes(%q) = %q, want an error", tt.in, got)
			continue
		}
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != ErrUnknownType.Code || ce.Kind != core.KindInvalid {
			t.Errorf("ParseTypes(%q): error %#v, want ErrUnknownType", tt.in, err)
			continue
		}
		if got != nil {
			t.Errorf("ParseTypes(%q) = %q beside its error", tt.in, got)
		}
		if !strings.Contains(ce.Message, tt.mention) {
			t.Errorf("ParseTypes(%q): message %q does not name %s", tt.in, ce.Message, tt.mention)
		}
		for _, k := range Types {
			if !strings.Contains(ce.Message, string(k)) {
				t.Errorf("ParseTypes(%q): message %q does not list %s", tt.in, ce.Message, k)
			}
		}
	}
	if ErrUnknownType.Message != "Unknown event type" {
		t.Errorf("ErrUnknownType's message was changed in place: %q", ErrUnknownType.Message)
	}
}

func FuzzParseTypes(f *testing.F) {
	for _, s := range []string{"*", " * ", "", ",", "blob.uploaded", "a,,b", "*,blob.uploaded",
		"appointment.booked, appointment.cancelled ,appointment.cancelled", "\t*\n", "blob.uploaded\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTypes(s)
		if err != nil {
			if !errors.Is(err, ErrUnknownType) {
				t.Fatalf("ParseTypes(%q): unexpected error %v", s, err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("ParseTypes(%q) = nothing and no error", s)
		}
		if slices.Contains(got, All) {
			if len(got) != 1 {
				t.Fatalf("ParseTypes(%q) = %q: '*' beside names", s, got)
			}
			return
		}
		seen := map[string]bool{}
		for _, name := range got {
			if !isType(name) || seen[name] {
				t.Fatalf("ParseTypes(%q) = %q: unknown or repeated %q", s, got, name)
			}
			seen[name] = true
		}
	})
}

var at = time.Date(2026, 3, 4, 5, 6, 7, 123_000_000, time.UTC)

func TestBody_IsTheContractsJSON(t *testing.T) {
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{"appointment", Appointment(AppointmentBooked, "apt-1", "agent-2", "booked",
			time.Date(2026, 5, 1, 10, 0, 0, 0, cet), time.Date(2026, 5, 1, 10, 30, 0, 0, cet), ""),
			`{"id":"evt_1","type":"appointment.booked","occurredAt":"2026-03-04T05:06:07.123Z","businessId":null,` +
				`"data":{"appointmentId":"apt-1","agentId":"agent-2","status":"booked","start":"2026-05-01T09:00:00Z","end":"2026-05-01T09:30:00Z"}}`},
		{"appointment of a business", Appointment(AppointmentCancelled, "apt-1", "agent-2", "cancelled",
			time.Date(2026, 5, 1, 10, 0, 0, 0, cet), time.Date(2026, 5, 1, 10, 30, 0, 0, cet), "biz-1"),
			`{"id":"evt_1","type":"appointment.cancelled","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-1",` +
				`"data":{"appointmentId":"apt-1","agentId":"agent-2","status":"cancelled","start":"2026-05-01T09:00:00Z","end":"2026-05-01T09:30:00Z"}}`},
		{"blob with location", Blob(BlobUploaded, 42, "scans", "17", "biz-1"),
			`{"id":"evt_1","type":"blob.uploaded","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-1",` +
				`"data":{"blobId":42,"containerName":"scans","businessLocationId":"17"}}`},
		{"blob without location", Blob(BlobDeleted, 7, "misc", "", ""),
			`{"id":"evt_1","type":"blob.deleted","occurredAt":"2026-03-04T05:06:07.123Z","businessId":null,` +
				`"data":{"blobId":7,"containerName":"misc","businessLocationId":null}}`},
		{"location", Location(LocationCreated, 9, "biz-2"),
			`{"id":"evt_1","type":"location.created","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-2","data":{"locationId":9}}`},
		{"hours", Location(OperatingHoursChanged, 9, "biz-2"),
			`{"id":"evt_1","type":"operating_hours.changed","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-2","data":{"locationId":9}}`},
		{"business", Business("biz-3"),
			`{"id":"evt_1","type":"business.updated","occurredAt":"2026-03-04T05:06:07.123Z","businessId":"biz-3","data":{"businessId":"biz-3"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.e
			e.ID, e.OccurredAt = "evt_1", at.In(cet)
			got, err := e.Body()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Body() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestBody_OccurredAtIsRFC3339(t *testing.T) {
	e := Business("b")
	e.OccurredAt = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	got, err := e.Body()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"occurredAt":"2026-03-04T05:06:07Z"`) {
		t.Errorf("Body() = %s", got)
	}
	m := regexp.MustCompile(`"occurredAt":"([^"]*)"`).FindSubmatch(got)
	if _, err := time.Parse(time.RFC3339, string(m[1])); err != nil {
		t.Errorf("occurredAt %s: %v", m[1], err)
	}
}

func TestBody_RejectsNoData(t *testing.T) {
	if b, err := New(BusinessUpdated, "", nil).Body(); err == nil {
		t.Errorf("Body() of no data = %s, want an error", b)
	}
}

func TestNew_FreshIDAndNow(t *testing.T) {
	id := regexp.MustCompile(`^evt_[0-9a-f]{32}$`)
	seen := map[string]bool{}
	before := time.Now().Add(-time.Millisecond)
	for range 1000 {
		e := New(LocationUpdated, "b", LocationData{LocationID: 1})
		if !id.MatchString(e.ID) {
			t.Fatalf("id %q", e.ID)
		}
		if seen[e.ID] {
			t.Fatalf("id %q twice", e.ID)
		}
		seen[e.ID] = true
		if e.OccurredAt.Location() != time.UTC || e.OccurredAt.Before(before) || e.OccurredAt.After(time.Now()) ||
			e.OccurredAt.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("OccurredAt %v", e.OccurredAt)
		}
		if e.Type != LocationUpdated || e.BusinessID != "b" || e.Data != (LocationData{LocationID: 1}) {
			t.Fatalf("New() = %+v", e)
		}
	}
}
