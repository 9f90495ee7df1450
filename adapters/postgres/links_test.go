package postgres_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
	"github.com/carebridge/carebridge/test/pgtest"
)

func personLink(business string, d ehr.Decision, a, b ehr.SourceRef) ehr.PersonLink {
	return ehr.PersonLink{ID: core.NewUUID(), Business: business, Decision: d, Records: [2]ehr.SourceRef{a, b}, CreatedBy: "alice"}
}

var (
	recA = ehr.SourceRef{Source: "clinic-a", PatientID: "p-1"}
	recB = ehr.SourceRef{Source: "clinic-b", PatientID: "p-9"}
	recC = ehr.SourceRef{Source: "clinic-b", PatientID: "p-10"}
)

// linkPending is a request's context carrying its pending audit event.
func linkPending(action audit.Action, status int) (context.Context, *audit.Pending) {
	p := &audit.Pending{Event: audit.Event{RequestID: "req-" + string(action), Actor: "alice", Action: action,
		ResourceType: "person_link", Outcome: audit.Success, Status: status}}
	return audit.WithPending(context.Background(), p), p
}

func TestPairKey_NamesThePairInEitherOrder(t *testing.T) {
	if postgres.LinksPairKey(recA, recB) != postgres.LinksPairKey(recB, recA) {
		t.Fatal("the key depends on the order")
	}
	if postgres.LinksPairKey(recA, recB) == postgres.LinksPairKey(recA, recC) {
		t.Fatal("two pairs share a key")
	}
	// Fields are not run together: "ab"+"c" is not "a"+"bc".
	x := postgres.LinksPairKey(ehr.SourceRef{Source: "ab", PatientID: "c"}, recA)
	y := postgres.LinksPairKey(ehr.SourceRef{Source: "a", PatientID: "bc"}, recA)
	if x == y {
		t.Fatal("fields run together")
	}
}

func TestIntegrationLinks_PutListDeleteWithTheirAuditEvents(t *testing.T) {
	db := pgtest.Store(t)
	a, other := seedBusiness(t, db, "owner-a").ID, seedBusiness(t, db, "owner-b").ID
	links := db.Links()

	ctx, p := linkPending(audit.PersonLink, 201)
	first, err := links.Put(ctx, personLink(a, ehr.Different, recA, recB))
	if err != nil || !p.Committed() || first.CreatedAt.IsZero() {
		t.Fatalf("put: %+v %v, committed %v", first, err, p.Committed())
	}
	if _, err := links.Put(context.Background(), personLink(a, ehr.Same, recA, recC)); err != nil {
		t.Fatal(err)
	}
	if _, err := links.Put(context.Background(), personLink(other, ehr.Same, recA, recB)); err != nil {
		t.Fatal(err)
	}
	// The same pair the other way round replaces the first decision.
	ctx, _ = linkPending(audit.PersonLink, 201)
	newer, err := links.Put(ctx, personLink(a, ehr.Same, recB, recA))
	if err != nil {
		t.Fatal(err)
	}

	got, total, err := links.List(context.Background(), a, ehr.PageRequest{Page: 1, Limit: 10})
	if err != nil || total != 2 || len(got) != 2 {
		t.Fatalf("list: %d of %d, %v", len(got), total, err)
	}
	if got[0].ID != newer.ID || got[0].Decision != ehr.Same || got[0].Records != [2]ehr.SourceRef{recB, recA} ||
		got[0].Business != a || got[0].CreatedBy != "alice" || !got[0].CreatedAt.Equal(newer.CreatedAt) {
		t.Fatalf("newest first, records in the order given: %+v, want %+v", got[0], newer)
	}
	if page, total, _ := links.List(context.Background(), a, ehr.PageRequest{Page: 2, Limit: 1}); total != 2 || len(page) != 1 || page[0].ID != got[1].ID {
		t.Fatalf("page 2: %+v of %d", page, total)
	}
	if page, total, _ := links.List(context.Background(), a, ehr.PageRequest{Page: 3, Limit: 1}); total != 2 || len(page) != 0 {
		t.Fatalf("page 3: %+v of %d", page, total)
	}

	// Only the business's own link may be deleted.
	if _, err := links.Delete(context.Background(), other, newer.ID); !errors.Is(err, ehr.ErrLinkNotFound) {
		t.Fatalf("delete of another business's link: %v", err)
	}
	if _, err := links.Delete(context.Background(), a, first.ID); !errors.Is(err, ehr.ErrLinkNotFound) {
		t.Fatalf("delete of a replaced link: %v", err)
	}
	ctx, p = linkPending(audit.PersonUnlink, 204)
	gone, err := links.Delete(ctx, a, newer.ID)
	if err != nil || !p.Committed() || gone.Decision != ehr.Same || gone.ID != newer.ID {
		t.Fatalf("delete: %+v %v, committed %v", gone, err, p.Committed())
	}
	if set, err := links.Links(context.Background(), a); err != nil || set.Len() != 1 {
		t.Fatalf("links left: %d %v", set.Len(), err)
	}

	events, err := db.AuditTrail().List(context.Background(), postgres.AuditFilter{})
	if err != nil || len(events) != 3 {
		t.Fatalf("%d events, %v", len(events), err)
	}
	want := map[audit.Action][]string{audit.PersonLink: {first.ID + " different", newer.ID + " same"}, audit.PersonUnlink: {newer.ID + " same"}}
	for _, e := range events {
		desc := e.ResourceID + " " + e.Detail["decision"].(string)
		if !slices.Contains(want[e.Action], desc) || e.BusinessID != a || len(e.Detail) != 1 || e.ResourceType != "person_link" {
			t.Errorf("event %+v", e)
		}
	}
	if _, _, ok := verifyAudit(t, db); !ok {
		t.Fatal("chain broken")
	}
}

func TestIntegrationLinks_AChangeWhoseEventIsRefusedIsNotMade(t *testing.T) {
	db := pgtest.Store(t)
	a := seedBusiness(t, db, "owner-a").ID
	links := db.Links()
	kept, err := links.Put(context.Background(), personLink(a, ehr.Same, recA, recB))
	if err != nil {
		t.Fatal(err)
	}
	refuseAction(t, db, audit.PersonLink)
	allow := func() {
		if _, err := db.Pool().Exec(context.Background(), `DROP TRIGGER refuse_audit ON audit_events; DROP FUNCTION refuse_audit()`); err != nil {
			t.Fatal(err)
		}
	}
	ctx, p := linkPending(audit.PersonLink, 201)
	if _, err := links.Put(ctx, personLink(a, ehr.Different, recA, recB)); !errors.Is(err, audit.ErrUnavailable) || p.Committed() {
		t.Fatalf("put: %v, committed %v; want audit_unavailable", err, p.Committed())
	}
	allow()
	refuseAction(t, db, audit.PersonUnlink)
	ctx, p = linkPending(audit.PersonUnlink, 204)
	if _, err := links.Delete(ctx, a, kept.ID); !errors.Is(err, audit.ErrUnavailable) || p.Committed() {
		t.Fatalf("delete: %v, committed %v; want audit_unavailable", err, p.Committed())
	}
	got, total, err := links.List(context.Background(), a, ehr.PageRequest{Page: 1, Limit: 10})
	if err != nil || total != 1 || got[0].ID != kept.ID || got[0].Decision != ehr.Same {
		t.Fatalf("a change was made unaudited: %+v %v", got, err)
	}
}

func TestIntegrationLinks_ConcurrentPutsOfOnePairLeaveOneRow(t *testing.T) {
	db := pgtest.Store(t)
	a := seedBusiness(t, db, "owner-a").ID
	links := db.Links()
	for round := range 10 {
		rec := ehr.SourceRef{Source: "clinic-b", PatientID: "q-" + string(rune('a'+round))}
		var wg sync.WaitGroup
		var errs [2]error
		start := make(chan struct{})
		for i, d := range []ehr.Decision{ehr.Same, ehr.Different} {
			wg.Go(func() {
				<-start
				ctx, _ := linkPending(audit.PersonLink, 201)
				x, y := recA, rec
				if i == 1 {
					x, y = y, x
				}
				_, errs[i] = links.Put(ctx, personLink(a, d, x, y))
			})
		}
		close(start)
		wg.Wait()
		if errs[0] != nil || errs[1] != nil {
			t.Fatalf("round %d: %v, %v", round, errs[0], errs[1])
		}
	}
	got, total, err := links.List(context.Background(), a, ehr.PageRequest{Page: 1, Limit: 100})
	if err != nil || total != 10 {
		t.Fatalf("%d rows, want one per pair: %v", total, err)
	}
	for _, l := range got {
		if l.Decision != ehr.Same && l.Decision != ehr.Different {
			t.Errorf("link %+v", l)
		}
	}
	if n := count(t, db, `SELECT count(*) FROM audit_events WHERE action = 'person.link'`); n != 20 {
		t.Fatalf("%d events, want one per call", n)
	}
	if _, _, ok := verifyAudit(t, db); !ok {
		t.Fatal("chain broken")
	}
}

// runLinks runs l's listener until the test ends and returns once it
// listens; the notifications it handles are sent on the channel returned.
func runLinks(t *testing.T, l *postgres.Links, loaded func(string)) <-chan string {
	t.Helper()
	up, heard := make(chan struct{}, 4), make(chan string, 64)
	postgres.LinksHooks(l, func() { up <- struct{}{} }, func(b string) { heard <- b }, loaded)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, func(err error) { t.Errorf("listen: %v", err) })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-up:
	case <-time.After(5 * time.Second):
		t.Fatal("not listening")
	}
	return heard
}

// hear waits for a notification of business.
func hear(t *testing.T, heard <-chan string, business string) {
	t.Helper()
	for {
		select {
		case b := <-heard:
			if b == business {
				return
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification of %s", business)
		}
	}
}

func TestIntegrationLinks_AChangeOnOneInstanceReachesTheOthersSet(t *testing.T) {
	url := pgtest.New(t)
	one, two := connect(t, url), connect(t, url)
	a := seedBusiness(t, one, "owner-a").ID
	l1, l2 := one.Links(), two.Links()
	heard := runLinks(t, l2, nil)

	if set, err := l2.Links(context.Background(), a); err != nil || set.Len() != 0 {
		t.Fatalf("before: %d %v", set.Len(), err)
	}
	link, err := l1.Put(context.Background(), personLink(a, ehr.Same, recA, recB))
	if err != nil {
		t.Fatal(err)
	}
	hear(t, heard, a)
	if set, err := l2.Links(context.Background(), a); err != nil || set.Len() != 1 {
		t.Fatalf("after a put on the other instance: %d %v", set.Len(), err)
	}
	// The set is kept while listening: a row written behind its back (no
	// notification, as no code of ours does) is not read again…
	if _, err := two.Pool().Exec(context.Background(), `UPDATE person_links SET decision = 'different'`); err != nil {
		t.Fatal(err)
	}
	if set, _ := l2.Links(context.Background(), a); set.Digest() != ehr.NewLinkSet([]ehr.PersonLink{link}).Digest() {
		t.Fatal("the kept set was not used")
	}
	// …and a delete on the other instance drops it.
	if _, err := l1.Delete(context.Background(), a, link.ID); err != nil {
		t.Fatal(err)
	}
	hear(t, heard, a)
	if set, err := l2.Links(context.Background(), a); err != nil || set.Len() != 0 {
		t.Fatalf("after a delete on the other instance: %d %v", set.Len(), err)
	}
}

func TestIntegrationLinks_ALoadThatRacedWithAChangeIsNotKept(t *testing.T) {
	url := pgtest.New(t)
	one, two := connect(t, url), connect(t, url)
	a := seedBusiness(t, one, "owner-a").ID
	l1, l2 := one.Links(), two.Links()
	var race sync.Once
	var heard <-chan string
	heard = runLinks(t, l2, func(business string) {
		// Between the read and the keep, another instance commits a
		// link and this one hears of it.
		race.Do(func() {
			if _, err := l1.Put(context.Background(), personLink(a, ehr.Same, recA, recB)); err != nil {
				t.Error(err)
			}
			hear(t, heard, a)
		})
	})
	if set, err := l2.Links(context.Background(), a); err != nil || set.Len() != 0 {
		t.Fatalf("the racing read: %d %v", set.Len(), err)
	}
	if set, err := l2.Links(context.Background(), a); err != nil || set.Len() != 1 {
		t.Fatalf("the next read served the stale set: %d %v", set.Len(), err)
	}
}

func TestIntegrationLinks_WithoutListeningEveryCallReadsTheDatabase(t *testing.T) {
	db := pgtest.Store(t)
	a := seedBusiness(t, db, "owner-a").ID
	links := db.Links() // Run never started
	if set, _ := links.Links(context.Background(), a); set.Len() != 0 {
		t.Fatal("links before any")
	}
	if _, err := db.Pool().Exec(context.Background(), `
		INSERT INTO person_links (id, business_id, decision, a_source, a_patient_id, b_source, b_patient_id, pair_key, created_by)
		VALUES (gen_random_uuid(), $1, 'same', 'x', '1', 'y', '2', decode(repeat('ab', 32), 'hex'), 'sql')`, a); err != nil {
		t.Fatal(err)
	}
	if set, _ := links.Links(context.Background(), a); set.Len() != 1 {
		t.Fatal("a set was served that no listener vouched for")
	}
	if set, err := links.Links(context.Background(), ""); set != nil || err != nil {
		t.Fatalf("no business: %v %v", set, err)
	}
}

func TestIntegrationLinks_ALostListenerStopsServingKeptSets(t *testing.T) {
	url := pgtest.New(t)
	db := connect(t, url)
	a := seedBusiness(t, db, "owner-a").ID
	links := db.Links()
	up, errs := make(chan struct{}, 4), make(chan error, 4)
	postgres.LinksHooks(links, func() { up <- struct{}{} }, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); links.Run(ctx, func(err error) { errs <- err }) }()
	defer func() { cancel(); <-done }()
	<-up
	if set, _ := links.Links(context.Background(), a); set.Len() != 0 {
		t.Fatal("links before any")
	}
	var killed bool
	if err := db.Pool().QueryRow(context.Background(), `
		SELECT bool_or(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query = 'LISTEN '||$1`, postgres.LinksChannel).Scan(&killed); err != nil || !killed {
		t.Fatalf("end the listening connection: %v %v", killed, err)
	}
	select {
	case <-errs:
	case <-time.After(5 * time.Second):
		t.Fatal("a lost connection was not told")
	}
	// Not listening (or listening again, with every set dropped): a row
	// written without a notification is read.
	if _, err := db.Pool().Exec(context.Background(), `
		INSERT INTO person_links (id, business_id, decision, a_source, a_patient_id, b_source, b_patient_id, pair_key, created_by)
		VALUES (gen_random_uuid(), $1, 'same', 'x', '1', 'y', '2', decode(repeat('ab', 32), 'hex'), 'sql')`, a); err != nil {
		t.Fatal(err)
	}
	if set, _ := links.Links(context.Background(), a); set.Len() != 1 {
		t.Fatal("a kept set was served after the listener was lost")
	}
}

func connect(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}
