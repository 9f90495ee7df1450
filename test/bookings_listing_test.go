package test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/app"
	"github.com/carebridge/carebridge/test/fhirtest"
)

// countingProxy is a front of a FHIR server (base) that counts the
// requests for Appointments it passes on.
type countingProxy struct {
	base  string
	appts atomic.Int64
}

func newCountingProxy(t *testing.T, peer *fhirtest.Server) *countingProxy {
	t.Helper()
	p := &countingProxy{}
	p.base = peer.Front(t, func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.Contains(r.URL.Path, "/Appointment") {
			p.appts.Add(1)
		}
		next.ServeHTTP(w, r)
	})
	return p
}

// ownListingBookings is how many bookings the patient of the listing test
// holds: the most a patient's listing reads.
const ownListingBookings = 500

// Reproduced from outside: a patient who booked (and cancelled) 500 times
// lists its appointments, which read every booking from the EHR one
// request each, the EHR's shared rate limit spent for every practice on
// it. The figures are printed: EHR requests for one listing of 500
// bookings, live and cancelled.
func TestBookings_APatientsListingOf500ReadsTheEHRInFewRequests(t *testing.T) {
	w := newWorld(t)
	peer := fhirtest.Start(t, fhirtest.WithAPIKey("s3cret"))
	agent := peer.AddAgent(t, drAna, workdays(5))
	counter := newCountingProxy(t, peer)

	// 500 past appointments of the patient in the EHR, recorded as its
	// bookings (what 500 bookings over the years leave).
	first := time.Now().UTC().AddDate(-2, 0, 0).Truncate(time.Hour)
	res := make([]map[string]any, ownListingBookings)
	for i := range res {
		start := first.Add(time.Duration(i) * 24 * time.Hour)
		res[i] = map[string]any{"resourceType": "Appointment", "status": "fulfilled",
			"start": start.Format(time.RFC3339), "end": start.Add(30 * time.Minute).Format(time.RFC3339),
			"participant": []any{map[string]any{"actor": map[string]any{"reference": "Practitioner/" + agent}, "status": "accepted"}}}
	}
	ids, err := peer.Batch(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(w.dbURL); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(context.Background(), `INSERT INTO appointment_bookings (subject, appointment_id, start_at)
		SELECT 'pat', id, $2 FROM unnest($1::text[]) AS id`, ids, first); err != nil {
		t.Fatal(err)
	}
	cfg := integrationFile(t, "fhir", counter.base, "    authentication: { type: api_key, api_key: \"env:PEER_SECRET\" }\n    sync: { interval: 0s }\n")
	s := w.start(func(c *app.Config) { c.EHR, c.SearchRateLimit = cfg, 1000 })
	pat := w.scopedToken("pat", "patient/Appointment.cus")

	list := func(what, query string, total float64) int64 {
		t.Helper()
		before := counter.appts.Load()
		r, page := s.ehrCall("GET", "/appointment"+query, pat, "")
		n := counter.appts.Load() - before
		t.Logf("EHR requests for one patient listing of %d bookings (%s): %d", ownListingBookings, what, n)
		if r.status != 200 || page["totalCount"] != total {
			t.Fatalf("listing (%s): %d %.300s; want %v appointments", what, r.status, r.body, total)
		}
		return n
	}
	if n := list("all live", "?limit=100", ownListingBookings); n > 10 {
		t.Errorf("one listing of %d bookings sent %d requests to the EHR; want a few searches", ownListingBookings, n)
	}

	// Each booking cancelled through the service (the book/cancel loop):
	// a listing reads none of them, unless asked for the cancelled ones.
	for i, id := range ids {
		res[i]["id"], res[i]["status"] = id, "cancelled"
		peer.Update(t, res[i])
	}
	if _, err := w.db.Exec(context.Background(), `UPDATE appointment_bookings SET cancelled = true WHERE subject = 'pat'`); err != nil {
		t.Fatal(err)
	}
	if n := list("all cancelled through the service", "", 0); n != 0 {
		t.Errorf("a listing of bookings all known cancelled sent %d requests to the EHR; want none", n)
	}
	if n := list("all cancelled, asked for", "?status=cancelled&limit=100", ownListingBookings); n > 10 {
		t.Errorf("a listing of %d cancelled bookings sent %d requests to the EHR; want a few searches", ownListingBookings, n)
	}
}
