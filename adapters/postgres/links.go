package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/carebridge/carebridge/core/audit"
	"github.com/carebridge/carebridge/core/ehr"
)

// LinksChannel is the channel every change of person_links notifies, with
// the business id as payload.
const LinksChannel = "person_links"

// maxLinkMemo bounds the businesses whose links a Links keeps in memory.
const maxLinkMemo = 4096

// Links keeps person links (it implements ehr.LinkStore). Search reads a
// business's links on every request (Links), so it keeps each business's
// set in memory while, and only while, it hears of every change: Run holds
// a connection listening on LinksChannel, and a notification (a change
// committed on any instance) drops that business's set; a change made
// here drops it as soon as it commits. While Run is not listening (before
// it starts, between a lost connection and the next, after it ends) every
// call reads the database: a set it could not vouch for is never served.
// One Links per process: each has its memo and its listening connection.
type Links struct {
	s *Store

	mu        sync.Mutex
	listening bool
	// epoch moves at every (re)connection and disconnection; gen moves
	// per business at every change heard of. A set read while either
	// moved may miss that change, so it is answered but not kept.
	epoch uint64
	gen   map[string]uint64
	memo  map[string]*ehr.LinkSet

	// Test hooks: up once listening, heard after a notification has
	// dropped its business's set, loaded after a set was read and before
	// it is kept; nil: none.
	up, heard, loaded func(business string)
}

// Links returns a store of person links with an empty memo; app makes one
// and runs its Run.
func (s *Store) Links() *Links {
	return &Links{s: s, gen: map[string]uint64{}, memo: map[string]*ehr.LinkSet{}}
}

var _ ehr.LinkStore = (*Links)(nil)

const linkColumns = `id::text, business_id::text, decision, a_source, a_patient_id, b_source, b_patient_id, created_by, created_at`

// Put stores l as its business's decision on its pair of records, replacing
// the one before (of either order), then notifies the other instances and
// appends the request's pending audit event (audit.Pending, its detail
// naming the decision) in the same transaction. Two concurrent Puts on one
// pair both succeed and leave one row: the one that commits last.
func (l *Links) Put(ctx context.Context, link ehr.PersonLink) (ehr.PersonLink, error) {
	a, b := link.Records[0], link.Records[1]
	key := pairKey(a, b)
	err := l.change(ctx, link.Business, link.Decision, func(tx pgx.Tx) (string, error) {
		err := tx.QueryRow(ctx, `
			INSERT INTO person_links (id, business_id, decision, a_source, a_patient_id, b_source, b_patient_id, pair_key, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (business_id, pair_key) DO UPDATE SET id = EXCLUDED.id, decision = EXCLUDED.decision,
				a_source = EXCLUDED.a_source, a_patient_id = EXCLUDED.a_patient_id,
				b_source = EXCLUDED.b_source, b_patient_id = EXCLUDED.b_patient_id,
				created_by = EXCLUDED.created_by, created_at = clock_timestamp()
			RETURNING created_at`,
			link.ID, link.Business, string(link.Decision), a.Source, a.PatientID, b.Source, b.PatientID, key[:], link.CreatedBy,
		).Scan(&link.CreatedAt)
		return link.ID, err
	})
	if err != nil {
		return ehr.PersonLink{}, fmt.Errorf("put person link: %w", err)
	}
	return link, nil
}

// List returns a page of business's links, newest first, and their count.
func (l *Links) List(ctx context.Context, business string, p ehr.PageRequest) ([]ehr.PersonLink, int, error) {
	var total int
	if err := l.s.pool.QueryRow(ctx, `SELECT count(*) FROM person_links WHERE business_id = $1`, business).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count person links: %w", err)
	}
	rows, _ := l.s.pool.Query(ctx, `SELECT `+linkColumns+` FROM person_links WHERE business_id = $1
		ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`, business, p.Limit, (p.Page-1)*p.Limit)
	links, err := pgx.CollectRows(rows, scanLink)
	if err != nil {
		return nil, 0, fmt.Errorf("list person links: %w", err)
	}
	return links, total, nil
}

// Delete removes business's link id, then notifies the other instances and
// appends the request's pending audit event (its detail naming the
// decision removed) in the same transaction. It returns the link as it
// was; ehr.ErrLinkNotFound when business has no link id.
func (l *Links) Delete(ctx context.Context, business, id string) (ehr.PersonLink, error) {
	var link ehr.PersonLink
	err := l.change(ctx, business, "", func(tx pgx.Tx) (string, error) {
		rows, _ := tx.Query(ctx, `DELETE FROM person_links WHERE business_id = $1 AND id = $2 RETURNING `+linkColumns, business, id)
		var err error
		link, err = pgx.CollectExactlyOneRow(rows, scanLink)
		if err == nil {
			decide(ctx, link.Decision)
		}
		return id, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return ehr.PersonLink{}, ehr.ErrLinkNotFound
	}
	if err != nil {
		return ehr.PersonLink{}, fmt.Errorf("delete person link %s: %w", id, err)
	}
	return link, nil
}

// change runs write, a change of business's links, in one transaction
// with the notification of the change and, last, the request's pending
// audit event, its detail naming decision ("": write sets it with decide);
// once it has committed, this instance's set of business is dropped.
func (l *Links) change(ctx context.Context, business string, decision ehr.Decision, write func(tx pgx.Tx) (resourceID string, err error)) error {
	if decision != "" {
		decide(ctx, decision)
	}
	err := audited(ctx, l.s.pool, func(tx pgx.Tx) (string, string, error) {
		id, err := write(tx)
		if err != nil {
			return "", "", err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, LinksChannel, business); err != nil {
			return "", "", err
		}
		return id, business, nil
	})
	l.forget(business) // also after a failure: the commit may have happened
	return err
}

// decide names decision in the detail of the request's pending audit event
// (person.link and person.unlink carry {decision}).
func decide(ctx context.Context, decision ehr.Decision) {
	if p := audit.PendingFrom(ctx); p != nil {
		d := maps.Clone(p.Event.Detail)
		if d == nil {
			d = map[string]any{}
		}
		d["decision"] = string(decision)
		p.Event.Detail = d
	}
}

// Links returns every link of business: from memory when a set is kept and
// Run is listening, else from the database (and kept when nothing changed
// meanwhile). No business ("", a single-practice search) has no links.
func (l *Links) Links(ctx context.Context, business string) (*ehr.LinkSet, error) {
	if business == "" {
		return nil, nil
	}
	l.mu.Lock()
	if set, ok := l.memo[business]; ok && l.listening {
		l.mu.Unlock()
		return set, nil
	}
	listening, epoch, gen := l.listening, l.epoch, l.gen[business]
	l.mu.Unlock()

	rows, _ := l.s.pool.Query(ctx, `SELECT `+linkColumns+` FROM person_links WHERE business_id = $1`, business)
	links, err := pgx.CollectRows(rows, scanLink)
	if err != nil {
		return nil, fmt.Errorf("read the person links of %s: %w", business, err)
	}
	set := ehr.NewLinkSet(links)
	if l.loaded != nil {
		l.loaded(business)
	}
	if listening {
		l.keep(business, set, epoch, gen)
	}
	return set, nil
}

// keep keeps set, read when the epoch and business's generation were
// epoch and gen, unless either has moved since (the set may then miss a
// change) or Run stopped listening.
func (l *Links) keep(business string, set *ehr.LinkSet, epoch, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.listening || l.epoch != epoch || l.gen[business] != gen {
		return
	}
	if len(l.memo) >= maxLinkMemo {
		for b := range l.memo { // any one
			delete(l.memo, b)
			break
		}
	}
	l.memo[business] = set
}

// forget drops the set of business: a change was made or heard of.
func (l *Links) forget(business string) {
	l.mu.Lock()
	l.gen[business]++
	delete(l.memo, business)
	l.mu.Unlock()
}

// listen sets whether Run is listening, and drops every set either way:
// changes may have been missed while not listening.
func (l *Links) listen(on bool) {
	l.mu.Lock()
	l.listening = on
	l.epoch++
	clear(l.memo)
	clear(l.gen) // the epoch has moved: no set read before is kept
	l.mu.Unlock()
}

// Run listens for the changes of person links on any instance until ctx
// is done, and reconnects after a failure (told to onError), a second
// later. Links keeps sets in memory only while Run listens.
func (l *Links) Run(ctx context.Context, onError func(error)) {
	for ctx.Err() == nil {
		err := l.s.listenOn(ctx, LinksChannel, func() {
			l.listen(true)
			if l.up != nil {
				l.up("")
			}
		}, func(business string) {
			l.forget(business)
			if l.heard != nil {
				l.heard(business)
			}
		})
		l.listen(false)
		if ctx.Err() != nil {
			return
		}
		onError(err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// scanLink reads linkColumns.
func scanLink(row pgx.CollectableRow) (ehr.PersonLink, error) {
	var (
		l        ehr.PersonLink
		decision string
	)
	err := row.Scan(&l.ID, &l.Business, &decision, &l.Records[0].Source, &l.Records[0].PatientID,
		&l.Records[1].Source, &l.Records[1].PatientID, &l.CreatedBy, &l.CreatedAt)
	l.Decision = ehr.Decision(decision)
	return l, err
}

// pairKey names a pair of records whichever way round it is given: SHA-256
// of the two, in order of source then patient id, each field prefixed by
// its length.
func pairKey(a, b ehr.SourceRef) [sha256.Size]byte {
	if cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.PatientID, b.PatientID)) > 0 {
		a, b = b, a
	}
	var buf []byte
	for _, f := range []string{a.Source, a.PatientID, b.Source, b.PatientID} {
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(f)))
		buf = append(buf, f...)
	}
	return sha256.Sum256(buf)
}
