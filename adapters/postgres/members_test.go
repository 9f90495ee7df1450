package postgres_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/business"
	"github.com/carebridge/carebridge/core/storage"
	"github.com/carebridge/carebridge/test/pgtest"
)

func allow([]business.Member) error { return nil }

func TestIntegrationMemberRepo_CreatingABusinessMakesItsOwnerTheFirstOwnerMember(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	ms, err := db.Members().List(ctx, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].Subject != "owner-1" || ms[0].Role != core.RoleOwner || ms[0].BusinessID != b.ID || ms[0].CreatedAt.IsZero() {
		t.Fatalf("members = %+v, want owner-1 as owner", ms)
	}
	if role, err := db.Members().Role(ctx, b.ID, "owner-1"); err != nil || role != core.RoleOwner {
		t.Fatalf("role = %q, %v", role, err)
	}
	for _, tc := range [][2]string{{b.ID, "stranger"}, {"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", "owner-1"}, {"nope", "owner-1"}} {
		if role, err := db.Members().Role(ctx, tc[0], tc[1]); err != nil || role != "" {
			t.Errorf("role of %s in %s = %q, %v, want none", tc[1], tc[0], role, err)
		}
	}
}

func TestIntegrationMigration0011_ExistingOwnersBecomeOwnerMembers(t *testing.T) {
	ctx := context.Background()
	dbURL := migratedTo(t, 10)
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id string
	if err := conn.QueryRow(ctx, `INSERT INTO businesses (owner_subject, name, email)
		VALUES ('legacy-owner', 'Old Clinic', 'old@example.com') RETURNING id::text`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if err := postgres.Migrate(dbURL); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.New(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := db.Members().List(ctx, id)
	if err != nil || len(ms) != 1 || ms[0].Subject != "legacy-owner" || ms[0].Role != core.RoleOwner {
		t.Fatalf("members after migration = %+v, %v, want the old owner as owner", ms, err)
	}
}

func TestIntegrationMemberRepo_AddSetRoleRemove(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	repo := db.Members()
	b := seedBusiness(t, db, "owner-1")

	m := business.Member{BusinessID: b.ID, Subject: "staff-1", Role: core.RoleStaff}
	if err := repo.Add(ctx, &m, allow); err != nil || m.CreatedAt.IsZero() {
		t.Fatalf("add: %+v, %v", m, err)
	}
	dup := business.Member{BusinessID: b.ID, Subject: "staff-1", Role: core.RoleAdmin}
	if err := repo.Add(ctx, &dup, allow); !errors.Is(err, business.ErrMemberExists) {
		t.Fatalf("add twice: %v, want member_exists", err)
	}
	bad := business.Member{BusinessID: b.ID, Subject: "x", Role: "root"}
	if err := repo.Add(ctx, &bad, allow); err == nil {
		t.Fatal("the database stored the role root")
	}
	missing := business.Member{BusinessID: "6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", Subject: "x", Role: core.RoleStaff}
	if err := repo.Add(ctx, &missing, allow); !errors.Is(err, business.ErrBusinessNotFound) {
		t.Fatalf("add to a missing business: %v", err)
	}

	got, err := repo.SetRole(ctx, b.ID, "staff-1", core.RoleAdmin, allow)
	if err != nil || got.Role != core.RoleAdmin || got.Subject != "staff-1" || !got.CreatedAt.Equal(m.CreatedAt) {
		t.Fatalf("set role: %+v, %v", got, err)
	}
	if _, err := repo.SetRole(ctx, b.ID, "nobody", core.RoleAdmin, allow); !errors.Is(err, business.ErrMemberNotFound) {
		t.Fatalf("set role of nobody: %v", err)
	}

	refused := errors.New("refused by check")
	var seen []business.Member
	err = repo.Remove(ctx, b.ID, "staff-1", func(ms []business.Member) error { seen = ms; return refused })
	if !errors.Is(err, refused) || len(seen) != 2 || seen[0].Subject != "owner-1" {
		t.Fatalf("remove with a refusing check: %v, saw %+v", err, seen)
	}
	if err := repo.Remove(ctx, b.ID, "staff-1", allow); err != nil {
		t.Fatal(err)
	}
	if err := repo.Remove(ctx, b.ID, "staff-1", allow); !errors.Is(err, business.ErrMemberNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
}

func TestIntegrationMemberRepo_TheDatabaseKeepsTheLastOwner(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	// The repository with a check that allows anything: the constraint
	// trigger is what refuses.
	if _, err := db.Members().SetRole(ctx, b.ID, "owner-1", core.RoleStaff, allow); !errors.Is(err, business.ErrLastOwner) {
		t.Fatalf("demote the last owner: %v, want last_owner", err)
	}
	if err := db.Members().Remove(ctx, b.ID, "owner-1", allow); !errors.Is(err, business.ErrLastOwner) {
		t.Fatalf("remove the last owner: %v, want last_owner", err)
	}
	// Deleting the business takes its members with it.
	if _, err := db.Pool().Exec(ctx, `DELETE FROM businesses WHERE id = $1`, b.ID); err != nil {
		t.Fatalf("delete the business: %v", err)
	}
}

// TestIntegrationMembers_OwnersDemotingEachOtherAtOnceLeaveAnOwner runs the
// business core on the real repository: two owners demote each other at
// the same moment, many times; exactly one of them wins each time.
func TestIntegrationMembers_OwnersDemotingEachOtherAtOnceLeaveAnOwner(t *testing.T) {
	db := pgtest.Store(t)
	svc := business.NewService(db.Businesses(), db.Members(), db.Locations(), db.Providers(), db.Hours(), nil, db.BusinessTx())
	as := func(sub string) context.Context {
		return core.WithActor(context.Background(), core.Actor{Subject: sub})
	}
	for round := range 20 {
		b := seedBusiness(t, db, "a")
		if _, err := svc.AddMember(as("a"), b.ID, "b", core.RoleOwner); err != nil {
			t.Fatal(err)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, pair := range [][2]string{{"a", "b"}, {"b", "a"}} {
			wg.Go(func() {
				<-start
				if i == 0 {
					_, errs[i] = svc.ChangeMemberRole(as(pair[0]), b.ID, pair[1], core.RoleAdmin)
				} else {
					errs[i] = svc.RemoveMember(as(pair[0]), b.ID, pair[1])
				}
			})
		}
		close(start)
		wg.Wait()
		ms, err := db.Members().List(context.Background(), b.ID)
		if err != nil {
			t.Fatal(err)
		}
		owners := 0
		for _, m := range ms {
			if m.Role == core.RoleOwner {
				owners++
			}
		}
		if owners != 1 {
			t.Fatalf("round %d: %d owners left (%+v), errors %v", round, owners, ms, errs)
		}
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				// The loser is no longer an owner (or no longer a member).
				if !errors.Is(err, core.ErrInsufficientRole) && !errors.Is(err, business.ErrBusinessNotFound) {
					t.Errorf("round %d: loser's error %v, want insufficient_role or business_not_found", round, err)
				}
			}
		}
		if failed != 1 {
			t.Fatalf("round %d: %d of the two changes failed (%v), want exactly one", round, failed, errs)
		}
	}
}

func TestIntegrationLocationRole(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	loc := seedLocation(t, db, b, "Main")
	m := business.Member{BusinessID: b.ID, Subject: "staff-1", Role: core.RoleStaff}
	if err := db.Members().Add(ctx, &m, allow); err != nil {
		t.Fatal(err)
	}
	for sub, want := range map[string]core.Role{"owner-1": core.RoleOwner, "staff-1": core.RoleStaff, "stranger": ""} {
		if role, err := db.LocationRole(ctx, loc.ID, sub); err != nil || role != want {
			t.Errorf("role of %s = %q, %v, want %q", sub, role, err, want)
		}
	}
	if _, err := db.LocationRole(ctx, loc.ID+1000, "owner-1"); !errors.Is(err, storage.ErrLocationNotFound) {
		t.Fatalf("missing location: %v", err)
	}
}

func TestIntegrationMemberRepo_BusinessesOfAndBusinessExists(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	a, b := seedBusiness(t, db, "owner-a"), seedBusiness(t, db, "owner-b")
	if err := db.Members().Add(ctx, &business.Member{BusinessID: b.ID, Subject: "owner-a", Role: core.RoleStaff}, allow); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		subject string
		want    int
	}{{"owner-a", 2}, {"owner-b", 1}, {"stranger", 0}} {
		ids, err := db.Members().BusinessesOf(ctx, tc.subject)
		if err != nil || len(ids) != tc.want {
			t.Errorf("businesses of %s: %v %v, want %d", tc.subject, ids, err, tc.want)
		}
	}
	if ids, _ := db.Members().BusinessesOf(ctx, "owner-b"); ids[0] != b.ID {
		t.Errorf("owner-b's business %v, want %s", ids, b.ID)
	}
	for _, tc := range []struct {
		id   string
		want bool
	}{{a.ID, true}, {strings.ToUpper(b.ID), true}, {"6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f", false}, {"nope", false}} {
		if ok, err := db.Members().BusinessExists(ctx, tc.id); err != nil || ok != tc.want {
			t.Errorf("business %s exists: %v %v", tc.id, ok, err)
		}
	}
}

// TestIntegrationReadsForMember checks the reads that carry their
// membership check in the same statement: members of any role get the
// rows, a stranger and a missing business or location get none, and an
// empty list of a member is told from a stranger's.
func TestIntegrationReadsForMember(t *testing.T) {
	ctx := context.Background()
	db := pgtest.Store(t)
	b := seedBusiness(t, db, "owner-1")
	loc := seedLocation(t, db, b, "Main")
	bare := seedLocation(t, db, b, "Bare")  // no hours, no providers
	empty := seedBusiness(t, db, "owner-2") // no locations
	m := business.Member{BusinessID: b.ID, Subject: "staff-1", Role: core.RoleStaff}
	if err := db.Members().Add(ctx, &m, allow); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Hours().Add(ctx, loc.ID, []business.Hours{{Day: time.Tuesday, Start: "09:00", End: "17:00"}, {Day: time.Monday, Start: "08:00", End: "12:00"}}); err != nil {
		t.Fatal(err)
	}
	p := business.Provider{FirstName: "Ana", LastName: "Doe", Email: "ana@example.com"}
	if err := db.Providers().Create(ctx, &p, loc.ID); err != nil {
		t.Fatal(err)
	}
	const missingBiz = "6f1c1b4e-6c55-4b8e-9a56-1a2b3c4d5e6f"
	missingLoc := bare.ID + 1000

	for sub, want := range map[string]core.Role{"owner-1": core.RoleOwner, "staff-1": core.RoleStaff, "stranger": ""} {
		got, role, err := db.Businesses().GetWithRole(ctx, b.ID, sub)
		if err != nil || role != want || got.ID != b.ID || got.Name != b.Name {
			t.Errorf("business as %s = %+v, %q, %v, want role %q", sub, got, role, err, want)
		}
		l, role, err := db.Locations().GetWithRole(ctx, loc.ID, sub)
		if err != nil || role != want || l.ID != loc.ID || l.BusinessID != b.ID {
			t.Errorf("location as %s = %+v, %q, %v, want role %q", sub, l, role, err, want)
		}
		member := want != ""
		ls, ok, err := db.Locations().ListByBusinessForMember(ctx, b.ID, sub)
		if err != nil || ok != member || (member && (len(ls) != 2 || ls[0].ID != loc.ID || ls[1].ID != bare.ID)) || (!member && len(ls) != 0) {
			t.Errorf("locations as %s = %d, %v, %v, want member %v", sub, len(ls), ok, err, member)
		}
		hs, ok, err := db.Hours().ListForMember(ctx, loc.ID, sub)
		if err != nil || ok != member || (member && (len(hs) != 2 || hs[0].Day != time.Monday)) || (!member && len(hs) != 0) {
			t.Errorf("hours as %s = %+v, %v, %v, want member %v", sub, hs, ok, err, member)
		}
		ps, ok, err := db.Providers().ListByLocationForMember(ctx, loc.ID, sub)
		if err != nil || ok != member || (member && (len(ps) != 1 || ps[0].ID != p.ID)) || (!member && len(ps) != 0) {
			t.Errorf("providers as %s = %+v, %v, %v, want member %v", sub, ps, ok, err, member)
		}
		// Empty lists: a member is still a member.
		if hs, ok, err := db.Hours().ListForMember(ctx, bare.ID, sub); err != nil || ok != member || len(hs) != 0 {
			t.Errorf("hours of a bare location as %s = %+v, %v, %v, want member %v", sub, hs, ok, err, member)
		}
		if ps, ok, err := db.Providers().ListByLocationForMember(ctx, bare.ID, sub); err != nil || ok != member || len(ps) != 0 {
			t.Errorf("providers of a bare location as %s = %+v, %v, %v, want member %v", sub, ps, ok, err, member)
		}
	}
	if ls, ok, err := db.Locations().ListByBusinessForMember(ctx, empty.ID, "owner-2"); err != nil || !ok || len(ls) != 0 {
		t.Errorf("locations of a business without any = %+v, %v, %v, want none of a member", ls, ok, err)
	}

	// Missing rows.
	if _, _, err := db.Businesses().GetWithRole(ctx, missingBiz, "owner-1"); !errors.Is(err, business.ErrBusinessNotFound) {
		t.Errorf("missing business: %v", err)
	}
	if _, _, err := db.Businesses().GetWithRole(ctx, "nope", "owner-1"); !errors.Is(err, business.ErrBusinessNotFound) {
		t.Errorf("business id that is no UUID: %v", err)
	}
	if _, _, err := db.Locations().GetWithRole(ctx, missingLoc, "owner-1"); !errors.Is(err, business.ErrLocationNotFound) {
		t.Errorf("missing location: %v", err)
	}
	for _, id := range []string{missingBiz, "nope"} {
		if ls, ok, err := db.Locations().ListByBusinessForMember(ctx, id, "owner-1"); err != nil || ok || len(ls) != 0 {
			t.Errorf("locations of business %s = %+v, %v, %v, want no member", id, ls, ok, err)
		}
	}
	if hs, ok, err := db.Hours().ListForMember(ctx, missingLoc, "owner-1"); err != nil || ok || len(hs) != 0 {
		t.Errorf("hours of a missing location = %+v, %v, %v", hs, ok, err)
	}
	if ps, ok, err := db.Providers().ListByLocationForMember(ctx, missingLoc, "owner-1"); err != nil || ok || len(ps) != 0 {
		t.Errorf("providers of a missing location = %+v, %v, %v", ps, ok, err)
	}
}
