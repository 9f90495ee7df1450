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

// FuzzRecordItems feeds arbitrary records.search results to the item
// converter: no panic; a record read is of the type and person asked, and
// its value is nil, a string, or a quantity whose decimal is a JSON number.
func FuzzRecordItems(f *testing.F) {
	for _, seed := range []string{
		``, `null`, `{}`, `{"items":null}`, `{"items":[null]}`,
		`{"items":[{"id":"r1","type":"Observation","patientId":"p1","date":"2024-03-01","status":"final","code":{"system":"http://loinc.org","code":"2345-7","display":"Glucose"},"text":"Glucose","value":{"value":5.40,"unit":"mmol/L"}}],"totalCount":1,"page":1,"limit":100}`,
		`{"items":[{"id":"r2","value":"negative"},{"id":"r3","value":null},{"id":"r4","value":{"value":null,"unit":"mg"}}]}`,
		`{"items":[{"id":"r5","value":true},{"value":5},{"value":[1]},{"value":{"value":"5"}},{"value":{"value":-1e3}}]}`,
		`{"items":[{"type":"Condition","patientId":"p2"},{"code":null,"date":"bad"}]}`,
	} {
		f.Add([]byte(seed))
	}
	q := ehr.RecordQuery{Type: ehr.TypeObservation, PatientID: "p1"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var list wireList[wireRecord]
		if json.Unmarshal(body, &list) != nil {
			return
		}
		for _, w := range list.Items {
			r, err := recordFromWire(w, q)
			if err != nil {
				continue
			}
			if r.Type != q.Type || r.PatientID != q.PatientID {
				t.Fatalf("record of %s/%s; asked %s/%s", r.Type, r.PatientID, q.Type, q.PatientID)
			}
			if v := r.Value; v != nil && v.Quantity != nil {
				var n json.Number
				if v.String != "" || json.Unmarshal([]byte(v.Quantity.Value), &n) != nil || n.String() != v.Quantity.Value ||
					v.Quantity.Value[0] == '"' {
					t.Fatalf("quantity %+v is not a decimal as written", v)
				}
			}
		}
	})
}
