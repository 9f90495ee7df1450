package wsbot

import (
	"encoding/json"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/carebridge/carebridge/core/ehr"
)

// FuzzResults feeds arbitrary result bodies to the converters, as call
// and the Scheduler methods do: no panic, and every appointment read has a
// known status.
func FuzzResults(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `[]`, `{}`, `{"items":null}`,
		`{"id":"a","agentId":"g","start":"2031-01-01T10:00:00+02:00","end":"2031-01-01T11:00:00Z","status":"booked","patient":{"firstName":"A"}}`,
		`{"id":"a","status":"weird","start":"x"}`,
		`{"id":5,"status":["booked"]}`,
		`{"items":[{"id":"a","status":"CANCELLED"},{"status":null}],"totalCount":-1,"page":"1"}`,
		`{"agentId":"g","slots":[{"start":"2031-01-01T10:00:00Z","end":"2031-01-01T09:00:00Z"},{"start":"","end":""}]}`,
		`{"items":[{"id":" p ","name":{"given":[null,"A"]},"gender":"X","birthDate":"2000-02-30","identifiers":[{"value":" "}],"lastUpdated":"bad"}]}`,
	} {
		f.Add([]byte(seed))
	}
	log := slog.New(slog.DiscardHandler)
	from := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(48 * time.Hour)
	f.Fuzz(func(t *testing.T, body []byte) {
		var one wireAppointment
		if json.Unmarshal(body, &one) == nil {
			if a, err := appointmentFromWire(one, "src", log); err == nil && !slices.Contains(ehr.AppointmentStatuses, a.Status) {
				t.Fatalf("status %q is not an internal one", a.Status)
			}
		}
		var list wireList[wireAppointment]
		if json.Unmarshal(body, &list) == nil {
			for _, w := range list.Items {
				if a, err := appointmentFromWire(w, "src", log); err == nil && !slices.Contains(ehr.AppointmentStatuses, a.Status) {
					t.Fatalf("status %q is not an internal one", a.Status)
				}
			}
		}
		var agents wireList[wireAgent]
		if json.Unmarshal(body, &agents) == nil {
			for _, w := range agents.Items {
				_ = agentFromWire(w)
			}
		}
		var av wireAvailability
		if json.Unmarshal(body, &av) == nil {
			if ps, err := freeSpans(av.Slots, from, to); err == nil {
				for i, p := range ps {
					if !p.End.After(p.Start) || p.Start.Before(from) || p.End.After(to) || i > 0 && !p.Start.After(ps[i-1].End) {
						t.Fatalf("spans %v are not clipped, sorted and disjoint", ps)
					}
				}
			}
		}
		var patients wireList[wirePatient]
		if json.Unmarshal(body, &patients) == nil {
			for _, w := range patients.Items {
				p := patientFromWire(w, "src")
				if !p.LastUpdated.IsZero() && p.LastUpdated.Location() != time.UTC {
					t.Fatalf("lastUpdated %v not in UTC", p.LastUpdated)
				}
			}
		}
	})
}
