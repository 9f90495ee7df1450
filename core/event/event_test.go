package event

import (
	"errors"
	"slices"
	"strings"
	"testing"

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
		for _, k := range core.EventTypes {
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
