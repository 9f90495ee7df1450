package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/test/pgtest"
)

// hoursFixture is a store with one location.
func hoursFixture(t *testing.T) (*postgres.Store, business.Location) {
	t.Helper()
	db := pgtest.Store(t)
	return db, seedLocation(t, db, seedBusiness(t, db, "owner-1"), "Main")
}

func countHours(t *testing.T, db *postgres.Store, locationID int64) int {
	t.Helper()
	var n int
	if err := db.Pool().QueryRow(context.Background(), `SELECT count(*) FROM operating_hours WHERE location_id = $1`, locationID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func entry(d time.Weekday, start, end string) business.Hours {
	return business.Hours{Day: d, Start: start, End: end}
}

func TestIntegrationHoursRepo_ListsMondayFirstSundayLast(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	in := []business.Hours{
		entry(time.Sunday, "10:00", "14:00"), entry(time.Wednesday, "08:30", "17:45"),
		entry(time.Monday, "09:00", "17:00"), entry(time.Saturday, "00:00", "23:59"),
	}
	added, err := repo.Add(ctx, loc.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != len(in) {
		t.Fatalf("added %d entries, want %d", len(added), len(in))
	}
	for i, h := range added {
		if h.ID <= 0 || h.LocationID != loc.ID || h.Day != in[i].Day || h.Start != in[i].Start || h.End != in[i].End {
			t.Errorf("added entry %d: %+v, want %+v", i, h, in[i])
		}
	}

	got, err := repo.List(ctx, loc.ID)
	if err != nil {
		t.Fatal(err)
	}
	order := []time.Weekday{time.Monday, time.Wednesday, time.Saturday, time.Sunday}
	if len(got) != len(order) {
		t.Fatalf("listed %+v", got)
	}
	for i, d := range order {
		if got[i].Day != d {
			t.Errorf("entry %d is %s, want %s", i, got[i].Day, d)
		}
	}
	if got[0].Start != "09:00" || got[0].End != "17:00" || got[3].Start != "10:00" || got[3].End != "14:00" {
		t.Errorf("times changed: %+v", got)
	}
	var sunday int
	if err := db.Pool().QueryRow(ctx, `SELECT day FROM operating_hours WHERE id = $1`, added[0].ID).Scan(&sunday); err != nil || sunday != 7 {
		t.Fatalf("Sunday stored as day %d (%v), want ISO 7", sunday, err)
	}

	one, err := repo.Get(ctx, added[1].ID)
	if err != nil || one != added[1] {
		t.Fatalf("get: %+v, %v; want %+v", one, err, added[1])
	}
	if none, err := repo.List(ctx, loc.ID+100); err != nil || none == nil || len(none) != 0 {
		t.Fatalf("unknown location: %v, %v", none, err)
	}
}

func TestIntegrationHoursRepo_AddIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	if _, err := repo.Add(ctx, loc.ID, []business.Hours{entry(time.Tuesday, "09:00", "17:00")}); err != nil {
		t.Fatal(err)
	}

	_, err := repo.Add(ctx, loc.ID, []business.Hours{
		entry(time.Monday, "09:00", "17:00"), entry(time.Tuesday, "10:00", "12:00"), entry(time.Friday, "09:00", "17:00"),
	})
	if !errors.Is(err, business.ErrDuplicateDay) {
		t.Fatalf("got %v, want ErrDuplicateDay", err)
	}
	if msg := coreMessage(err); msg != "Tuesday already has operating hours at this location" {
		t.Errorf("message %q", msg)
	}
	if n := countHours(t, db, loc.ID); n != 1 {
		t.Fatalf("%d entries after a failed add, want 1", n)
	}

	// Two existing days are both named, in week order.
	if _, err := repo.Add(ctx, loc.ID, []business.Hours{entry(time.Sunday, "09:00", "12:00")}); err != nil {
		t.Fatal(err)
	}
	_, err = repo.Add(ctx, loc.ID, []business.Hours{
		entry(time.Sunday, "09:00", "17:00"), entry(time.Monday, "09:00", "17:00"), entry(time.Tuesday, "09:00", "17:00"),
	})
	if msg := coreMessage(err); !errors.Is(err, business.ErrDuplicateDay) || msg != "Tuesday and Sunday already have operating hours at this location" {
		t.Fatalf("got %v", err)
	}
	if n := countHours(t, db, loc.ID); n != 2 {
		t.Fatalf("%d entries after a failed add, want 2", n)
	}
}

// coreMessage is the message a client would see for err.
func coreMessage(err error) string {
	var e *core.Error
	if errors.As(err, &e) {
		return e.Message
	}
	return ""
}

func TestIntegrationHoursRepo_ConcurrentAddsOfOneDayLeaveOneEntry(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	const callers = 8
	start := make(chan struct{})
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			<-start
			_, errs[i] = repo.Add(ctx, loc.ID, []business.Hours{entry(time.Monday, "09:00", "17:00")})
		})
	}
	close(start)
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, business.ErrDuplicateDay):
			t.Errorf("unexpected error: %v", err)
		case coreMessage(err) != "Monday already has operating hours at this location":
			t.Errorf("message %q", coreMessage(err))
		}
	}
	if ok != 1 {
		t.Errorf("%d adds succeeded, want exactly 1", ok)
	}
	if n := countHours(t, db, loc.ID); n != 1 {
		t.Fatalf("%d entries for Monday, want 1", n)
	}
}

func TestIntegrationHoursRepo_UpdateToAnotherEntrysDayConflicts(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	added, err := repo.Add(ctx, loc.ID, []business.Hours{entry(time.Monday, "09:00", "17:00"), entry(time.Tuesday, "09:00", "17:00")})
	if err != nil {
		t.Fatal(err)
	}
	tue := added[1]

	moved := entry(time.Monday, "08:00", "12:00")
	moved.ID, moved.LocationID = tue.ID, tue.LocationID
	if _, err := repo.Update(ctx, moved); !errors.Is(err, business.ErrDayConflict) || !strings.Contains(coreMessage(err), "Monday") {
		t.Fatalf("got %v, want ErrDayConflict naming Monday", err)
	}
	if got, err := repo.Get(ctx, tue.ID); err != nil || got != tue {
		t.Fatalf("a failed update changed the entry: %+v, %v", got, err)
	}

	moved.Day = time.Sunday
	stored, err := repo.Update(ctx, moved)
	if err != nil {
		t.Fatal(err)
	}
	if stored != moved {
		t.Fatalf("update returned %+v, want %+v", stored, moved)
	}
	if got, err := repo.Get(ctx, tue.ID); err != nil || got != moved {
		t.Fatalf("stored %+v, %v", got, err)
	}
	// Keeping the day while changing the times is no conflict.
	moved.End = "13:00"
	if _, err := repo.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
}

func TestIntegrationHoursRepo_MissingEntryIsNotFound(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	if _, err := repo.Get(ctx, 555); !errors.Is(err, business.ErrHoursNotFound) {
		t.Errorf("get: %v", err)
	}
	h := entry(time.Monday, "09:00", "10:00")
	h.ID, h.LocationID = 555, loc.ID
	if _, err := repo.Update(ctx, h); !errors.Is(err, business.ErrHoursNotFound) {
		t.Errorf("update: %v", err)
	}
	if err := repo.Delete(ctx, 555); !errors.Is(err, business.ErrHoursNotFound) {
		t.Errorf("delete: %v", err)
	}

	added, err := repo.Add(ctx, loc.ID, []business.Hours{h})
	if err != nil {
		t.Fatal(err)
	}
	if err := repo.Delete(ctx, added[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := repo.Delete(ctx, added[0].ID); !errors.Is(err, business.ErrHoursNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if _, err := repo.Get(ctx, added[0].ID); !errors.Is(err, business.ErrHoursNotFound) {
		t.Errorf("get after delete: %v", err)
	}
}

func TestIntegrationHoursRepo_AddForMissingLocationIsNotFound(t *testing.T) {
	db := pgtest.Store(t)
	_, err := db.Hours().Add(context.Background(), 9999, []business.Hours{entry(time.Monday, "09:00", "17:00")})
	if !errors.Is(err, business.ErrLocationNotFound) {
		t.Fatalf("got %v", err)
	}
}

func TestIntegrationHoursRepo_CheckRejectsEndNotAfterStart(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	repo := db.Hours()
	for _, h := range []business.Hours{entry(time.Monday, "17:00", "09:00"), entry(time.Monday, "09:00", "09:00")} {
		_, err := repo.Add(ctx, loc.ID, []business.Hours{entry(time.Tuesday, "09:00", "17:00"), h})
		var pe *pgconn.PgError
		if !errors.Is(err, business.ErrInvalid) || !errors.As(err, &pe) || pe.Code != "23514" {
			t.Errorf("add %s-%s: %v, want ErrInvalid from the CHECK", h.Start, h.End, err)
		}
		if !strings.Contains(coreMessage(err), "end_time must be after start_time") {
			t.Errorf("message %q", coreMessage(err))
		}
	}
	if n := countHours(t, db, loc.ID); n != 0 {
		t.Fatalf("%d entries after failed adds", n)
	}

	added, err := repo.Add(ctx, loc.ID, []business.Hours{entry(time.Monday, "09:00", "17:00")})
	if err != nil {
		t.Fatal(err)
	}
	bad := added[0]
	bad.End = "08:00"
	if _, err := repo.Update(ctx, bad); !errors.Is(err, business.ErrInvalid) {
		t.Fatalf("update: %v", err)
	}
	if got, err := repo.Get(ctx, bad.ID); err != nil || got != added[0] {
		t.Fatalf("a rejected update changed the entry: %+v, %v", got, err)
	}
}

func TestIntegrationHoursRepo_RejectsMalformedInput(t *testing.T) {
	ctx := context.Background()
	db, loc := hoursFixture(t)
	for _, h := range []business.Hours{
		entry(time.Weekday(7), "09:00", "17:00"), entry(time.Weekday(-1), "09:00", "17:00"),
		entry(time.Monday, "9:00", "17:00"), entry(time.Monday, "09:00", "24:00"), entry(time.Monday, "", "17:00"),
	} {
		if _, err := db.Hours().Add(ctx, loc.ID, []business.Hours{h}); !errors.Is(err, business.ErrInvalid) {
			t.Errorf("add %+v: %v", h, err)
		}
	}
	if n := countHours(t, db, loc.ID); n != 0 {
		t.Fatalf("%d entries stored", n)
	}
}
