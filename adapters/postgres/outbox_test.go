package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/pgtest"
)

// outboxRow is one row of events, with its body read as the contract
// shapes it.
type outboxRow struct {
	Seq        int64
	ID         string
	Type       string
	BusinessID string // "" for NULL
	Body       []byte
	CreatedAt  time.Time
}

// eventsAfter returns the events written after seq, oldest first, and
// moves seq past them.
func eventsAfter(t *testing.T, db *postgres.Store, seq *int64) []outboxRow {
	t.Helper()
	rows, err := db.Pool().Query(context.Background(), `
		SELECT seq, id, type, coalesce(business_id::text, ''), body, created_at FROM events WHERE seq > $1 ORDER BY seq`, *seq)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		if err := rows.Scan(&r.Seq, &r.ID, &r.Type, &r.BusinessID, &r.Body, &r.CreatedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
		*seq = r.Seq
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func countRows(t *testing.T, db *postgres.Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// oneEvent asserts that exactly one event was written after seq, of type
// typ and business businessID ("" for none), with a body of the
// contract's shape whose data is wantData (as JSON), and returns it.
func oneEvent(t *testing.T, db *postgres.Store, seq *int64, typ core.EventType, businessID, wantData string) outboxRow {
	t.Helper()
	evs := eventsAfter(t, db, seq)
	if len(evs) != 1 {
		t.Fatalf("%s: %d events written, want 1: %+v", typ, len(evs), evs)
	}
	e := evs[0]
	var body map[string]json.RawMessage
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("%s: body %s: %v", typ, e.Body, err)
	}
	if len(body) != 5 {
		t.Errorf("%s: body has fields other than id, type, occurredAt, businessId, data: %s", typ, e.Body)
	}
	var id, typeName, occurred string
	var business *string
	for k, v := range map[string]any{"id": &id, "type": &typeName, "occurredAt": &occurred, "businessId": &business} {
		if err := json.Unmarshal(body[k], v); err != nil {
			t.Fatalf("%s: body field %s in %s: %v", typ, k, e.Body, err)
		}
	}
	if id != e.ID || !strings.HasPrefix(id, "evt_") || len(id) != 36 {
		t.Errorf("%s: body id %q, row id %q; want evt_ and 32 hex digits, the same", typ, id, e.ID)
	}
	if typeName != string(typ) || e.Type != string(typ) {
		t.Errorf("type: body %q, row %q; want %q", typeName, e.Type, typ)
	}
	at, err := time.Parse(time.RFC3339, occurred)
	if err != nil || !at.Equal(e.CreatedAt) || time.Since(at) > time.Minute || time.Until(at) > time.Second {
		t.Errorf("%s: occurredAt %q (%v), written at %v", typ, occurred, err, e.CreatedAt)
	}
	switch {
	case businessID == "" && (business != nil || e.BusinessID != ""):
		t.Errorf("%s: businessId %s (row %q), want null", typ, body["businessId"], e.BusinessID)
	case businessID != "" && (business == nil || *business != businessID || e.BusinessID != businessID):
		t.Errorf("%s: businessId %s (row %q), want %q", typ, body["businessId"], e.BusinessID, businessID)
	}
	if !sameJSON(t, body["data"], wantData) {
		t.Errorf("%s: data %s, want %s", typ, body["data"], wantData)
	}
	return e
}

// noEvent asserts that nothing was written after seq.
func noEvent(t *testing.T, db *postgres.Store, seq *int64, what string) {
	t.Helper()
	if evs := eventsAfter(t, db, seq); len(evs) != 0 {
		t.Errorf("%s wrote %d events: %+v", what, len(evs), evs)
	}
}

func sameJSON(t *testing.T, got []byte, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: %v", want, err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	return string(gb) == string(wb)
}

// The cores decide which event a change has and write it through their
// Transactor (their own tests pin the decisions); these tests run the
// changes the same way over PostgreSQL and check what the adapter owns:
// the change and its event commit together or not at all, the body is the
// contract's, and the business of a blob is that of its location.

// bizTx runs change and writes the event it returns in one transaction of
// the business core's Transactor.
func bizTx(db *postgres.Store, change func(r business.Repos) (core.Event, error)) error {
	return db.BusinessTx().WithinTx(context.Background(), func(ctx context.Context, r business.Repos) error {
		e, err := change(r)
		if err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, e)
	})
}

// blobTx is bizTx for the storage core.
func blobTx(db *postgres.Store, change func(r storage.Repos) (core.Event, error)) error {
	return db.StorageTx().WithinTx(context.Background(), func(ctx context.Context, r storage.Repos) error {
		e, err := change(r)
		if err != nil {
			return err
		}
		return r.Outbox.Emit(ctx, e)
	})
}

func updateBusiness(db *postgres.Store, id string, fn func(*business.Business) error) error {
	return bizTx(db, func(r business.Repos) (core.Event, error) {
		b, err := r.Businesses.Update(context.Background(), id, fn)
		return core.BusinessEvent(b.ID), err
	})
}

func createLocation(db *postgres.Store, l *business.Location) error {
	return bizTx(db, func(r business.Repos) (core.Event, error) {
		err := r.Locations.Create(context.Background(), l)
		return core.LocationEvent(core.LocationCreated, l.ID, l.BusinessID), err
	})
}

func updateLocation(db *postgres.Store, id int64, fn func(*business.Location) error) error {
	return bizTx(db, func(r business.Repos) (core.Event, error) {
		l, err := r.Locations.Update(context.Background(), id, fn)
		return core.LocationEvent(core.LocationUpdated, id, l.BusinessID), err
	})
}

func addHours(db *postgres.Store, loc business.Location, hs ...business.Hours) ([]business.Hours, error) {
	var added []business.Hours
	err := bizTx(db, func(r business.Repos) (core.Event, error) {
		var err error
		added, err = r.Hours.Add(context.Background(), loc.ID, hs)
		return core.LocationEvent(core.OperatingHoursChanged, loc.ID, loc.BusinessID), err
	})
	return added, err
}

func updateHours(db *postgres.Store, loc business.Location, h business.Hours) error {
	return bizTx(db, func(r business.Repos) (core.Event, error) {
		_, err := r.Hours.Update(context.Background(), h)
		return core.LocationEvent(core.OperatingHoursChanged, loc.ID, loc.BusinessID), err
	})
}

func deleteHours(db *postgres.Store, loc business.Location, id int64) error {
	return bizTx(db, func(r business.Repos) (core.Event, error) {
		err := r.Hours.Delete(context.Background(), id)
		return core.LocationEvent(core.OperatingHoursChanged, loc.ID, loc.BusinessID), err
	})
}

func insertBlob(db *postgres.Store, b *storage.Blob) error {
	return blobTx(db, func(r storage.Repos) (core.Event, error) {
		err := r.Blobs.Insert(context.Background(), b)
		return core.BlobEvent(core.BlobUploaded, b.ID, string(b.Container), b.BusinessLocationID, b.BusinessID), err
	})
}

func deleteBlob(db *postgres.Store, id int64) error {
	return blobTx(db, func(r storage.Repos) (core.Event, error) {
		b, err := r.Blobs.Delete(context.Background(), id)
		return core.BlobEvent(core.BlobDeleted, b.ID, string(b.Container), b.BusinessLocationID, b.BusinessID), err
	})
}

func TestIntegrationOutbox_EveryChangeWritesItsEvent(t *testing.T) {
	db := pgtest.Store(t)
	var seq int64

	b := seedBusiness(t, db, "owner-1")
	noEvent(t, db, &seq, "creating a business")

	if err := updateBusiness(db, b.ID, func(x *business.Business) error { x.Name = "Renamed"; return nil }); err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.BusinessUpdated, b.ID, `{"businessId":"`+b.ID+`"}`)

	loc := business.Location{BusinessID: b.ID, Name: "Main"}
	if err := createLocation(db, &loc); err != nil {
		t.Fatal(err)
	}
	lid := strconv.FormatInt(loc.ID, 10)
	oneEvent(t, db, &seq, core.LocationCreated, b.ID, `{"locationId":`+lid+`}`)
	if err := updateLocation(db, loc.ID, func(l *business.Location) error { l.City = "Springfield"; return nil }); err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.LocationUpdated, b.ID, `{"locationId":`+lid+`}`)

	added, err := addHours(db, loc, entry(time.Monday, "09:00", "17:00"), entry(time.Tuesday, "09:00", "17:00"))
	if err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.OperatingHoursChanged, b.ID, `{"locationId":`+lid+`}`)
	h := added[0]
	h.End = "18:00"
	if err := updateHours(db, loc, h); err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.OperatingHoursChanged, b.ID, `{"locationId":`+lid+`}`)
	if err := deleteHours(db, loc, added[1].ID); err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.OperatingHoursChanged, b.ID, `{"locationId":`+lid+`}`)

	// A blob belongs to the business of its businessLocationId when that
	// is the id of a location, and to none otherwise.
	for _, tt := range []struct{ location, business, data string }{
		{lid, b.ID, `"` + lid + `"`},
		{"", "", `null`},
		{"loc-x", "", `"loc-x"`},
		{"999999", "", `"999999"`},
	} {
		blob := storage.Blob{Name: "obj-" + tt.location, Container: storage.ContainerUploads, OriginalFilename: "r.pdf",
			ContentType: "application/pdf", Size: 1, UploadedBy: "alice", SHA256: "ab", BusinessLocationID: tt.location}
		if err := insertBlob(db, &blob); err != nil {
			t.Fatal(err)
		}
		data := `{"blobId":` + strconv.FormatInt(blob.ID, 10) + `,"containerName":"uploads","businessLocationId":` + tt.data + `}`
		oneEvent(t, db, &seq, core.BlobUploaded, tt.business, data)
		if err := deleteBlob(db, blob.ID); err != nil {
			t.Fatal(err)
		}
		oneEvent(t, db, &seq, core.BlobDeleted, tt.business, data)
	}
}

func TestIntegrationOutbox_AFailedChangeWritesNoEvent(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	loc := seedLocation(t, db, b, "Main")
	hours := db.Hours()
	added, err := hours.Add(ctx, loc.ID, []business.Hours{entry(time.Monday, "09:00", "17:00")})
	if err != nil {
		t.Fatal(err)
	}
	var seq int64
	eventsAfter(t, db, &seq)

	boom := errors.New("boom")
	if err := updateBusiness(db, b.ID, func(*business.Business) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("business update whose fn fails: %v", err)
	}
	noEvent(t, db, &seq, "a business update whose fn failed")
	if err := updateLocation(db, loc.ID, func(*business.Location) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("location update whose fn fails: %v", err)
	}
	noEvent(t, db, &seq, "a location update whose fn failed")
	if err := createLocation(db, &business.Location{BusinessID: "00000000-0000-4000-8000-000000000000", Name: "X"}); err == nil {
		t.Fatal("created a location of a missing business")
	}
	noEvent(t, db, &seq, "a location create that failed")

	// Tuesday is inserted before Monday conflicts: both go.
	if _, err := addHours(db, loc, entry(time.Tuesday, "09:00", "17:00"), entry(time.Monday, "10:00", "12:00")); !errors.Is(err, business.ErrDuplicateDay) {
		t.Fatalf("add of a duplicate day: %v", err)
	}
	noEvent(t, db, &seq, "an hours add of a duplicate day")
	if _, err := addHours(db, business.Location{ID: 999999}, entry(time.Monday, "09:00", "17:00")); !errors.Is(err, business.ErrLocationNotFound) {
		t.Fatalf("add for a missing location: %v", err)
	}
	noEvent(t, db, &seq, "an hours add for a missing location")
	if err := updateHours(db, loc, business.Hours{ID: 999999, Day: time.Monday, Start: "09:00", End: "10:00"}); !errors.Is(err, business.ErrHoursNotFound) {
		t.Fatalf("update of missing hours: %v", err)
	}
	if err := deleteHours(db, loc, 999999); !errors.Is(err, business.ErrHoursNotFound) {
		t.Fatalf("delete of missing hours: %v", err)
	}
	noEvent(t, db, &seq, "an update and a delete of missing hours")
	if err := deleteBlob(db, 999999); !errors.Is(err, storage.ErrBlobNotFound) {
		t.Fatalf("delete of a missing blob: %v", err)
	}
	noEvent(t, db, &seq, "a delete of a missing blob")

	// An event that cannot be written fails its change: the change and
	// the event are one transaction.
	if _, err := db.Pool().Exec(ctx, `ALTER TABLE events ADD CONSTRAINT no_events CHECK (type = 'appointment.booked') NOT VALID`); err != nil {
		t.Fatal(err)
	}
	if err := updateBusiness(db, b.ID, func(x *business.Business) error { x.Name = "Lost"; return nil }); err == nil {
		t.Fatal("business updated without its event")
	}
	if got, err := db.Businesses().Get(ctx, b.ID); err != nil || got.Name != b.Name {
		t.Fatalf("business kept the change without its event: %q %v", got.Name, err)
	}
	if err := updateLocation(db, loc.ID, func(l *business.Location) error { l.Name = "Lost"; return nil }); err == nil {
		t.Fatal("location updated without its event")
	}
	if err := createLocation(db, &business.Location{BusinessID: b.ID, Name: "Second"}); err == nil {
		t.Fatal("location created without its event")
	}
	if _, err := addHours(db, loc, entry(time.Friday, "09:00", "17:00")); err == nil {
		t.Fatal("hours added without their event")
	}
	if err := deleteHours(db, loc, added[0].ID); err == nil {
		t.Fatal("hours deleted without their event")
	}
	blob := storage.Blob{Name: "obj-1", Container: storage.ContainerImages, OriginalFilename: "a.png",
		ContentType: "image/png", Size: 1, UploadedBy: "alice", SHA256: "ab"}
	if err := insertBlob(db, &blob); err == nil {
		t.Fatal("blob inserted without its event")
	}
	if got, err := db.Locations().Get(ctx, loc.ID); err != nil || got.Name != "Main" {
		t.Fatalf("location kept the change without its event: %q %v", got.Name, err)
	}
	if n := countRows(t, db, `SELECT count(*) FROM business_locations`); n != 1 {
		t.Errorf("%d locations, want the one seeded", n)
	}
	if n := countRows(t, db, `SELECT count(*) FROM blob_entries`); n != 0 {
		t.Errorf("%d blob entries kept without their event", n)
	}
	if hs, err := hours.List(ctx, loc.ID); err != nil || len(hs) != 1 || hs[0].ID != added[0].ID {
		t.Errorf("hours changed without their event: %+v %v", hs, err)
	}
	noEvent(t, db, &seq, "changes whose events failed")
}

// ehrTx runs what the EHR core does to record a booking the EHR
// confirmed: the Idempotency-Key's outcome when key is set, the booking,
// and its event the first time, in one transaction.
func ehrTx(db *postgres.Store, key string, outcome ehr.Outcome, b *ehr.Booking, e core.Event) error {
	return db.EHRTx().WithinTx(context.Background(), func(ctx context.Context, r ehr.Repos) error {
		if key != "" {
			if err := r.Idempotency.Complete(ctx, "ana", key, outcome); err != nil || b == nil {
				return err
			}
		}
		recorded, err := r.Bookings.Record(ctx, *b)
		if err != nil || !recorded {
			return err
		}
		return r.Outbox.Emit(ctx, e)
	})
}

func TestIntegrationOutbox_ABookingWritesItsEventOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	idem, bookings := db.Idempotency(), db.Bookings()
	start := time.Date(2030, 1, 2, 15, 0, 0, 0, time.UTC)
	booked := func(id string) core.Event {
		return core.AppointmentEvent(core.AppointmentBooked, core.OriginAPI, id, "dr-1", "booked", start, start.Add(30*time.Minute), "")
	}
	data := func(id string) string {
		return `{"appointmentId":"` + id + `","agentId":"dr-1","status":"booked","start":"2030-01-02T15:00:00Z","end":"2030-01-02T15:30:00Z","origin":"api"}`
	}
	var seq int64

	ev := booked("a-1")
	if err := ehrTx(db, "", ehr.Outcome{}, &ehr.Booking{Subject: "ana", AppointmentID: "a-1"}, ev); err != nil {
		t.Fatal(err)
	}
	if e := oneEvent(t, db, &seq, core.AppointmentBooked, "", data("a-1")); e.ID != ev.ID {
		t.Errorf("event id %s, want the booking's %s", e.ID, ev.ID)
	}
	// Recording it again (a retry, with the same event or a fresh one)
	// writes nothing more.
	for _, again := range []core.Event{ev, booked("a-1")} {
		if err := ehrTx(db, "", ehr.Outcome{}, &ehr.Booking{Subject: "ana", AppointmentID: "a-1"}, again); err != nil {
			t.Fatalf("recording again: %v", err)
		}
	}
	noEvent(t, db, &seq, "recording a booking again")
	if recorded, err := bookings.Record(ctx, ehr.Booking{Subject: "ana", AppointmentID: "a-0"}); err != nil || !recorded {
		t.Fatal(recorded, err)
	}
	noEvent(t, db, &seq, "a booking recorded alone")

	// With the outcome of an Idempotency-Key.
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		if _, _, err := idem.Claim(ctx, "ana", k, []string{"fp"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := ehrTx(db, "k1", ehr.Outcome{AppointmentID: "a-2"}, &ehr.Booking{Subject: "ana", AppointmentID: "a-2"}, booked("a-2")); err != nil {
		t.Fatal(err)
	}
	oneEvent(t, db, &seq, core.AppointmentBooked, "", data("a-2"))
	if err := ehrTx(db, "k2", ehr.Outcome{Error: &ehr.OutcomeError{}}, nil, core.Event{}); err != nil {
		t.Fatal(err)
	}
	noEvent(t, db, &seq, "an outcome of no booking")

	// A Complete that fails keeps neither the outcome, nor the booking, nor
	// its event: when the booking cannot be recorded,
	if _, err := db.Pool().Exec(ctx, `ALTER TABLE appointment_bookings ADD CONSTRAINT no_x CHECK (appointment_id <> 'x')`); err != nil {
		t.Fatal(err)
	}
	if err := ehrTx(db, "k3", ehr.Outcome{AppointmentID: "x"}, &ehr.Booking{Subject: "ana", AppointmentID: "x"}, booked("x")); err == nil {
		t.Fatal("Complete succeeded with a booking that cannot be recorded")
	}
	// and when its event cannot be written (an event of the same id is
	// there).
	dup := booked("a-3")
	if err := db.Outbox().Emit(ctx, dup); err != nil {
		t.Fatal(err)
	}
	eventsAfter(t, db, &seq)
	if err := ehrTx(db, "k4", ehr.Outcome{AppointmentID: "a-3"}, &ehr.Booking{Subject: "ana", AppointmentID: "a-3"}, dup); err == nil {
		t.Fatal("Complete succeeded with an event that cannot be written")
	}
	if err := ehrTx(db, "", ehr.Outcome{}, &ehr.Booking{Subject: "ana", AppointmentID: "a-3"}, dup); err == nil {
		t.Fatal("Record succeeded with an event that cannot be written")
	}
	for _, k := range []string{"k3", "k4"} {
		if _, _, err := idem.Claim(ctx, "ana", k, []string{"fp"}); !errors.Is(err, ehr.ErrIdempotencyInProgress) {
			t.Errorf("the outcome of %s was kept: %v", k, err)
		}
	}
	for _, id := range []string{"x", "a-3"} {
		if _, ok, err := bookings.IsBookedBy(ctx, "ana", "", id); err != nil || ok {
			t.Errorf("booking %s kept: %v %v", id, ok, err)
		}
	}
	noEvent(t, db, &seq, "failed Completes")
	if n := countRows(t, db, `SELECT count(*) FROM events`); n != 3 {
		t.Errorf("%d events, want a-1, a-2 and the one emitted alone", n)
	}
}
