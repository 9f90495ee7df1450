package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/business"
)

// HoursRepo keeps operating hours; it implements business.HoursRepo. One
// entry per location and day is the constraint operating_hours_one_per_day,
// so it holds under concurrent requests.
type HoursRepo struct {
	db dbtx
}

// Hours returns the operating-hours repository.
func (s *Store) Hours() *HoursRepo { return &HoursRepo{db: s.pool} }

// Constraints of operating_hours whose violations name a business error.
const (
	hoursOnePerDay     = "operating_hours_one_per_day"
	hoursEndAfterStart = "operating_hours_end_after_start"
)

// hoursColumns reads an entry with its times as HH:MM.
const hoursColumns = `id, location_id, day, to_char(start_time, 'HH24:MI'), to_char(end_time, 'HH24:MI')`

// isoDay maps a Go weekday (Sunday = 0) to the day column (ISO 8601:
// 1 = Monday … 7 = Sunday).
func isoDay(d time.Weekday) int16 {
	if d == time.Sunday {
		return 7
	}
	return int16(d)
}

// weekday maps the day column back to a Go weekday.
func weekday(iso int16) time.Weekday { return time.Weekday(iso % 7) }

// hoursArgs are the named arguments of a write of entry h: its id, day
// and times (its location is named by the caller, once, on insert).
func hoursArgs(h business.Hours) pgx.NamedArgs {
	return pgx.NamedArgs{"id": h.ID, "day": isoDay(h.Day), "start_time": h.Start, "end_time": h.End}
}

func scanHours(row pgx.Row) (business.Hours, error) {
	var (
		h   business.Hours
		day int16
	)
	if err := row.Scan(&h.ID, &h.LocationID, &day, &h.Start, &h.End); err != nil {
		return business.Hours{}, err
	}
	h.Day = weekday(day)
	return h, nil
}

// checkHours rejects what the columns cannot hold before it reaches the
// database: a weekday out of range, times that are not HH:MM. That the end
// is after the start is left to the CHECK constraint.
func checkHours(h business.Hours) error {
	if h.Day < time.Sunday || h.Day > time.Saturday {
		return business.ErrInvalid.WithMessage("Validation failed: day must be a weekday name, Monday to Sunday")
	}
	if _, ok := business.ParseClock(h.Start); !ok {
		return business.ErrInvalid.WithMessage("Validation failed: start_time must be HH:MM (24-hour)")
	}
	if _, ok := business.ParseClock(h.End); !ok {
		return business.ErrInvalid.WithMessage("Validation failed: end_time must be HH:MM (24-hour)")
	}
	return nil
}

// hoursWriteError translates a failed write of an entry: a missing location
// is not found, a violated CHECK is invalid. Unique violations are left to
// the callers, which name the day.
func hoursWriteError(op string, err error) error {
	code, constraint := pgError(err)
	switch code {
	case sqlForeignKeyViolation:
		return business.ErrLocationNotFound.Wrap(err)
	case sqlCheckViolation:
		if constraint == hoursEndAfterStart {
			return business.ErrInvalid.WithMessage("Validation failed: end_time must be after start_time").Wrap(err)
		}
		return business.ErrInvalid.WithMessage("Validation failed: the operating hours entry is not valid").Wrap(err)
	case sqlInvalidDatetime, sqlDatetimeOverflow:
		return business.ErrInvalid.WithMessage("Validation failed: start_time and end_time must be HH:MM (24-hour)").Wrap(err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// List returns the location's entries, Monday first and Sunday last; an
// unknown location has none.
func (r *HoursRepo) List(ctx context.Context, locationID int64) ([]business.Hours, error) {
	rows, err := r.db.Query(ctx, `SELECT `+hoursColumns+` FROM operating_hours WHERE location_id = $1 ORDER BY day`, locationID)
	if err != nil {
		return nil, fmt.Errorf("list operating hours of location %d: %w", locationID, err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Hours, error) { return scanHours(row) })
	if err != nil {
		return nil, fmt.Errorf("list operating hours of location %d: %w", locationID, err)
	}
	return hs, nil
}

// ListForMember returns the location's entries, Monday first, when
// subject is a member of the location's business; member is false
// otherwise (and for a missing location). The entries and the membership
// are one statement; only an empty list costs a second.
func (r *HoursRepo) ListForMember(ctx context.Context, locationID int64, subject string) ([]business.Hours, bool, error) {
	rows, err := r.db.Query(ctx, `SELECT `+hoursColumns+` FROM operating_hours
		WHERE location_id = $1 AND `+memberOfLocation+` ORDER BY day`, locationID, subject)
	if err != nil {
		return nil, false, fmt.Errorf("list operating hours of location %d: %w", locationID, err)
	}
	hs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (business.Hours, error) { return scanHours(row) })
	if err != nil {
		return nil, false, fmt.Errorf("list operating hours of location %d: %w", locationID, err)
	}
	if len(hs) > 0 {
		return hs, true, nil
	}
	member, err := isMemberOfLocation(ctx, r.db, locationID, subject)
	return hs, member, err
}

// Add stores every entry for the location, in one transaction, or none. A
// day the location already has is business.ErrDuplicateDay naming the
// day(s); a missing location is business.ErrLocationNotFound. The stored
// entries are returned in the order given.
func (r *HoursRepo) Add(ctx context.Context, locationID int64, hs []business.Hours) ([]business.Hours, error) {
	for _, h := range hs {
		if err := checkHours(h); err != nil {
			return nil, err
		}
	}
	added := make([]business.Hours, 0, len(hs))
	var failing time.Weekday
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		for _, h := range hs {
			failing = h.Day
			args := hoursArgs(h)
			args["location_id"] = locationID
			a, err := scanHours(tx.QueryRow(ctx, `
				INSERT INTO operating_hours (location_id, day, start_time, end_time)
				VALUES (@location_id, @day, @start_time::time, @end_time::time)
				RETURNING `+hoursColumns, args))
			if err != nil {
				return err
			}
			added = append(added, a)
		}
		return nil
	})
	if err == nil {
		return added, nil
	}
	if code, constraint := pgError(err); code == sqlUniqueViolation && constraint == hoursOnePerDay {
		return nil, r.duplicateDays(ctx, locationID, hs, failing, err)
	}
	return nil, hoursWriteError(fmt.Sprintf("add operating hours to location %d", locationID), err)
}

// duplicateDays builds the ErrDuplicateDay of a failed Add: after the
// rollback it asks which of the requested days the location has. When the
// answer is none (the request repeats a day, or the other entry has been
// deleted since), it names the day whose insert failed.
func (r *HoursRepo) duplicateDays(ctx context.Context, locationID int64, hs []business.Hours, failing time.Weekday, cause error) error {
	days := make([]int16, len(hs))
	seen := map[time.Weekday]bool{}
	repeated := false
	for i, h := range hs {
		days[i] = isoDay(h.Day)
		repeated = repeated || seen[h.Day]
		seen[h.Day] = true
	}
	var existing []int16
	rows, err := r.db.Query(ctx, `
		SELECT day FROM operating_hours WHERE location_id = $1 AND day = ANY($2) ORDER BY day`,
		locationID, days)
	if err == nil {
		existing, err = pgx.CollectRows(rows, pgx.RowTo[int16])
	}
	if err != nil || len(existing) == 0 {
		if err == nil && repeated {
			return business.ErrDuplicateDay.WithMessage("%s is given more than once in the request", failing).Wrap(cause)
		}
		return business.ErrDuplicateDay.WithMessage("%s already has operating hours at this location", failing).Wrap(cause)
	}
	names := make([]string, len(existing))
	for i, d := range existing {
		names[i] = weekday(d).String()
	}
	if len(names) == 1 {
		return business.ErrDuplicateDay.WithMessage("%s already has operating hours at this location", names[0]).Wrap(cause)
	}
	list := strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	return business.ErrDuplicateDay.WithMessage("%s already have operating hours at this location", list).Wrap(cause)
}

// Get returns entry id; a missing one is business.ErrHoursNotFound.
func (r *HoursRepo) Get(ctx context.Context, id int64) (business.Hours, error) {
	h, err := scanHours(r.db.QueryRow(ctx, `SELECT `+hoursColumns+` FROM operating_hours WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Hours{}, business.ErrHoursNotFound
	}
	if err != nil {
		return business.Hours{}, fmt.Errorf("get operating hours %d: %w", id, err)
	}
	return h, nil
}

// Update stores the day and times of entry h.ID (its location is kept) and
// returns the entry as stored. A day another entry of the location has is
// business.ErrDayConflict; a missing entry is business.ErrHoursNotFound.
func (r *HoursRepo) Update(ctx context.Context, h business.Hours) (business.Hours, error) {
	if err := checkHours(h); err != nil {
		return business.Hours{}, err
	}
	stored, err := scanHours(r.db.QueryRow(ctx, `
		UPDATE operating_hours SET day = @day, start_time = @start_time::time, end_time = @end_time::time
		WHERE id = @id
		RETURNING `+hoursColumns, hoursArgs(h)))
	if errors.Is(err, pgx.ErrNoRows) {
		return business.Hours{}, business.ErrHoursNotFound
	}
	if code, constraint := pgError(err); code == sqlUniqueViolation && constraint == hoursOnePerDay {
		return business.Hours{}, business.ErrDayConflict.WithMessage("Another entry of this location already has %s", h.Day).Wrap(err)
	}
	if err != nil {
		return business.Hours{}, hoursWriteError(fmt.Sprintf("update operating hours %d", h.ID), err)
	}
	return stored, nil
}

// Delete removes entry id; a missing one is business.ErrHoursNotFound.
func (r *HoursRepo) Delete(ctx context.Context, id int64) error {
	tag, err := r.db.Exec(ctx, `DELETE FROM operating_hours WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete operating hours %d: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return business.ErrHoursNotFound
	}
	return nil
}
