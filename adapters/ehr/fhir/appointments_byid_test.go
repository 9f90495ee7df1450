package fhir_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// seedAppointments stores n appointments of one practitioner in f and
// returns their ids.
func seedAppointments(f *fakeFHIR, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		start := day.Add(time.Duration(i) * time.Hour)
		ids[i] = f.add(map[string]any{"resourceType": "Appointment", "status": "booked",
			"start": start.Format(time.RFC3339), "end": start.Add(30 * time.Minute).Format(time.RFC3339),
			"participant": []any{map[string]any{"actor": map[string]any{"reference": "Practitioner/p-1"}, "status": "accepted"}}})
	}
	return ids
}

// requestsFor counts the requests f received whose path starts with
// prefix.
func requestsFor(f *fakeFHIR, prefix string) int {
	n := 0
	for _, r := range f.got() {
		if strings.HasPrefix(r, prefix) {
			n++
		}
	}
	return n
}

// A patient's 500 bookings are read with one search by id a batch of 100,
// not 500 reads: the figure is printed.
func TestScheduler_GetAppointmentsSearchesByIDInBatches(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 1000 // a server that honours _count
	ids := seedAppointments(f, 500)
	got, err := newScheduler(t, f, 0).GetAppointments(t.Context(), append(slices.Clone(ids), ids[0]))
	if err != nil || len(got) != 500 {
		t.Fatalf("GetAppointments: %d, %v", len(got), err)
	}
	n := requestsFor(f, "GET /Appointment")
	t.Logf("EHR requests to read 500 appointments: %d (one by one: 500)", n)
	if n != 5 || requestsFor(f, "GET /Appointment/") != 0 {
		t.Fatalf("%d requests; want 5 searches by id", n)
	}
	for _, r := range f.gotRequests() {
		if q := r.URL.Query(); len(strings.Split(q.Get("_id"), ",")) > 100 || len(r.URL.String()) > 8000 {
			t.Errorf("a search by id of %d ids, a URL of %d bytes", len(strings.Split(q.Get("_id"), ",")), len(r.URL.String()))
		}
	}
}

// A server that refuses the search by id, or ignores it and answers with
// others, has the batch read one by one; only what was asked for comes
// back.
func TestScheduler_GetAppointmentsReadsOneByOneWhenTheServerCannotSearchByID(t *testing.T) {
	for _, server := range []string{"refuses _id", "ignores _id"} {
		t.Run(server, func(t *testing.T) {
			f := newFakeFHIR(t)
			ids := seedAppointments(f, 12)
			if server == "refuses _id" {
				f.intercept = func(w http.ResponseWriter, r *http.Request, _ []byte) bool {
					if r.URL.Query().Has("_id") {
						f.outcome(w, http.StatusBadRequest, "unknown search parameter _id")
						return true
					}
					return false
				}
			} else {
				f.ignored["_id"] = true
			}
			ask := []string{ids[3], ids[7], "gone-1", "no id!"}
			got, err := newScheduler(t, f, 0).GetAppointments(t.Context(), ask)
			if err != nil || len(got) != 2 || got[0].ID != ids[3] || got[1].ID != ids[7] {
				t.Fatalf("GetAppointments: %+v, %v", got, err)
			}
			if n := requestsFor(f, "GET /Appointment/"); n != 3 {
				t.Fatalf("%d reads one by one; want 3 (the malformed id not sent): %v", n, f.got())
			}
		})
	}
}

// Many ids are cut into batches by count and by length.
func TestScheduler_GetAppointmentsBatchesLongIDsByLength(t *testing.T) {
	f := newFakeFHIR(t)
	f.pageSize = 1000
	var ids []string
	for i := range 80 {
		ids = append(ids, fmt.Sprintf("%s-%03d", strings.Repeat("x", 60), i))
	}
	if _, err := newScheduler(t, f, 0).GetAppointments(t.Context(), ids); err != nil {
		t.Fatal(err)
	}
	if n := requestsFor(f, "GET /Appointment"); n != 2 {
		t.Fatalf("%d searches for 80 ids of 64 characters; want 2, each under 4,000 bytes of ids", n)
	}
}
