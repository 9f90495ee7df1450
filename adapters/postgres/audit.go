package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core/audit"
)

// ErrAuditLogClosed is what Record and Ready return after Close.
var ErrAuditLogClosed = errors.New("audit log closed")

// AuditConfig tunes an AuditLog; a zero field takes its default.
type AuditConfig struct {
	// MaxBatch is the most events written in one transaction (512).
	MaxBatch int
	// Timeout bounds one batch's transaction, and Ready (5s): a database
	// that stops answering fails the callers instead of holding them.
	Timeout time.Duration
	// Tracer makes a span per commit (audittrace.go); nil: none.
	Tracer trace.TracerProvider
}

// AuditLog appends audit events to the hash chain in audit_events, with
// group commit: one writer goroutine takes every event queued (up to
// MaxBatch) and writes them in one transaction, so concurrent requests
// share a commit. Instances sharing the database serialise on the chain
// head's row lock, which keeps one chain without gaps across all of them.
type AuditLog struct {
	pool     *pgxpool.Pool
	maxBatch int
	timeout  time.Duration

	// mu is held for reading while a caller sends on queue, and for
	// writing to close queue, so no send happens on a closed channel.
	mu      sync.RWMutex
	closed  bool
	queue   chan *auditCall
	stopped chan struct{}

	events, batches, failed atomic.Uint64
	running                 atomic.Bool // Run has started

	commits trace.Tracer // nil: no spans
	since   time.Time    // when the commit answer tells began (the writer's)
}

// auditCall is one queued event and the caller waiting for its commit.
type auditCall struct {
	e        audit.Event
	detail   []byte            // canonicalDetail(e.Detail), what is stored
	business pgtype.UUID       // e.BusinessID; not Valid when none
	done     chan error        // buffered: the writer never waits on a caller
	caller   trace.SpanContext // the caller's span, when tracing
}

// AuditLog returns a writer of the audit trail; Run writes, and the caller
// starts it (app does). It has a small pool of its own, so the trail and
// the other queries never wait for each other's connections, and its
// sessions give up a lock wait after half the time-out on the server's
// side: a batch that the writer gave up on can then never commit later.
// Close stops it.
func (s *Store) AuditLog(cfg AuditConfig) (*AuditLog, error) {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	pc := s.pool.Config().Copy()
	pc.MaxConns, pc.MinConns = 3, 0 // the writer, Ready, a spare
	pc.ConnConfig.RuntimeParams["lock_timeout"] = strconv.FormatInt((cfg.Timeout / 2).Milliseconds(), 10)
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		return nil, fmt.Errorf("audit log pool: %w", err)
	}
	l := &AuditLog{
		pool:     pool,
		maxBatch: cfg.MaxBatch,
		timeout:  cfg.Timeout,
		queue:    make(chan *auditCall, 4*cfg.MaxBatch),
		stopped:  make(chan struct{}),
	}
	if cfg.Tracer != nil {
		l.commits = cfg.Tracer.Tracer(tracerName)
	}
	return l, nil
}

// Record appends e to the trail and returns once the transaction holding it
// has committed, or with the error that failed that transaction (every
// caller of the batch gets it), or ctx's error. An event that cannot be
// stored (an unknown outcome, a detail that is not JSON, a business id that
// is not a UUID) fails at once, alone. The store assigns ID and Hash; At is the caller's (the current
// time when zero), kept to the microsecond. Text that PostgreSQL cannot
// store (a NUL, invalid UTF-8) is replaced by U+FFFD. An error does not
// prove the event was not stored: ctx may end, or the connection drop,
// after the commit was sent. Record never writes an event twice.
func (l *AuditLog) Record(ctx context.Context, e audit.Event) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("record audit event: %w", err)
	}
	c, err := newAuditCall(e)
	if err != nil {
		return err
	}
	if l.commits != nil {
		c.caller = trace.SpanContextFromContext(ctx)
	}
	l.mu.RLock()
	if l.closed {
		l.mu.RUnlock()
		return ErrAuditLogClosed
	}
	select {
	case l.queue <- c:
		l.mu.RUnlock()
	case <-ctx.Done():
		l.mu.RUnlock()
		return fmt.Errorf("record audit event: %w", ctx.Err())
	}
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("record audit event: %w", ctx.Err())
	}
}

func newAuditCall(e audit.Event) (*auditCall, error) {
	switch e.Outcome {
	case audit.Success, audit.Denied, audit.Failed, audit.Started:
	default:
		return nil, fmt.Errorf("record audit event: unknown outcome %q", e.Outcome)
	}
	if e.Status < 0 || e.Status > math.MaxInt16 {
		return nil, fmt.Errorf("record audit event: status %d out of range", e.Status)
	}
	detail, err := canonicalDetail(e.Detail)
	if err != nil {
		return nil, fmt.Errorf("record audit event: detail: %w", err)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	// What is hashed must be exactly what is stored and read back.
	e.At = canonicalTime(e.At)
	e.RequestID = storableText(e.RequestID)
	e.Actor = storableText(e.Actor)
	e.Action = audit.Action(storableText(string(e.Action)))
	e.ResourceType = storableText(e.ResourceType)
	e.ResourceID = storableText(e.ResourceID)
	business, err := auditBusiness(e.BusinessID)
	if err != nil {
		return nil, err
	}
	e.BusinessID = business.String()
	return &auditCall{e: e, detail: detail, business: business, done: make(chan error, 1)}, nil
}

// auditBusiness reads an event's business id for the uuid column: none for
// "", else a UUID written 8-4-4-4-12, kept in lower case (the form the
// column gives back, so the hash covers what is read). Anything else is
// refused, that event alone: no event is stored with a business it did not
// name.
func auditBusiness(id string) (pgtype.UUID, error) {
	if id == "" {
		return pgtype.UUID{}, nil
	}
	u, ok := parseUUID(id)
	if !ok || !strings.EqualFold(u.String(), id) {
		return pgtype.UUID{}, fmt.Errorf("record audit event: business id %q is not a UUID", storableText(id))
	}
	return u, nil
}

// storableText replaces what a PostgreSQL text column refuses: NUL and
// invalid UTF-8.
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
}

// Run is the writer, until Close: Record waits for it. It takes what is queued as one batch and appends it
// after the head it knows (the last batch it wrote) in one statement; the
// callers that queue meanwhile make the next batch. When the head has moved
// (another instance appended) it appends the batch again holding the
// head's lock. (Sending the next batch before this one commits was tried:
// the head's row lock serialises the commits anyway, so it only made
// batches smaller: at 2,000 searches/s p99 grew by 4 ms. Committing each
// batch with synchronous_commit off, which frees the head's lock at once,
// and answering its callers after a flush sent behind it in the same round
// trip (a setval, whose commit waits for the WAL past the batch's) was
// tried too: durable, and 1.8 times the events/s at 32
// callers when a WAL flush takes 2 ms, but 8% fewer with the 0.2–0.3 ms
// flushes of this machine, and cached search at 32 connections fell from
// 0.45 to 0.39 of the no-op writer's rate: the extra transaction costs
// more CPU than the lock wait it saves.)
func (l *AuditLog) Run() {
	l.mu.Lock()
	if l.closed { // Close came first and wrote the queue itself
		l.mu.Unlock()
		return
	}
	l.running.Store(true)
	l.mu.Unlock()
	defer close(l.stopped)
	l.write()
}

// write appends the queued calls in batches until the queue is closed.
func (l *AuditLog) write() {
	var head *chainHead // what the next batch chains after; nil: read it
	for c := range l.queue {
		batch := l.fill(c)
		if head == nil {
			h, err := l.readHead()
			if err != nil {
				l.answer(batch, err)
				continue
			}
			head = &h
		}
		next, err := l.append(batch, *head)
		if errors.Is(err, errChainMoved) {
			next, err = l.appendLocked(batch)
		}
		head = nil
		if err == nil {
			head = &next
		}
		if refusedOne(err, batch) {
			l.appendEach(batch)
			continue
		}
		l.answer(batch, err)
	}
}

// refusedOne reports whether a batch of several events failed because the
// database refused a row (a trigger, a constraint), not because it could
// not be reached: one event may then be the cause, and the others must not
// fail with it.
func refusedOne(err error, batch []*auditCall) bool {
	var pgErr *pgconn.PgError
	return len(batch) > 1 && errors.As(err, &pgErr)
}

// appendEach appends the events of a refused batch one at a time, each
// under the chain head's lock, and answers each with its own outcome.
func (l *AuditLog) appendEach(batch []*auditCall) {
	for _, c := range batch {
		one := []*auditCall{c}
		l.since = time.Now()
		_, err := l.appendLocked(one)
		l.answer(one, err)
	}
}

// chainHead is the last event of the chain: its id and hash.
type chainHead struct {
	id   int64
	hash []byte
}

// errChainMoved is a batch that found the head elsewhere than it expected
// (another instance appended): it wrote nothing.
var errChainMoved = errors.New("the audit chain head moved")

// fill makes a batch of c and whatever else is queued now.
func (l *AuditLog) fill(c *auditCall) []*auditCall {
	l.since = time.Now()
	batch := []*auditCall{c}
	for len(batch) < l.maxBatch {
		select {
		case c, ok := <-l.queue:
			if !ok {
				return batch
			}
			batch = append(batch, c)
		default:
			return batch
		}
	}
	return batch
}

// answer tells every caller of a batch how it ended.
func (l *AuditLog) answer(calls []*auditCall, err error) {
	l.traceCommit(calls, err)
	if err != nil {
		l.failed.Add(uint64(len(calls)))
		err = fmt.Errorf("write audit events: %w", err)
	} else {
		l.events.Add(uint64(len(calls)))
		l.batches.Add(1)
	}
	for _, c := range calls {
		c.done <- err
	}
}

// appendLocked appends calls holding the chain head's lock from the read
// of the head to the commit (two round trips more than append), so
// another instance cannot move it in between.
func (l *AuditLog) appendLocked(calls []*auditCall) (chainHead, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	var next chainHead
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		var err error
		next, err = appendTx(ctx, tx, calls)
		return err
	})
	return next, err
}

// Ready reports whether events can be appended now: the database answers,
// is not a read-only standby, and the role may insert into audit_events and
// move the chain head. A request that changes something asks first.
func (l *AuditLog) Ready(ctx context.Context) error {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return ErrAuditLogClosed
	}
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var ok bool
	err := l.pool.QueryRow(ctx, `SELECT NOT pg_is_in_recovery()
		AND has_table_privilege('audit_events', 'INSERT')
		AND has_table_privilege('audit_chain_head', 'SELECT')
		AND has_table_privilege('audit_chain_head', 'UPDATE')`).Scan(&ok)
	switch {
	case err != nil:
		return fmt.Errorf("audit ready: %w", err)
	case !ok:
		return errors.New("audit ready: the database does not let this role append to audit_events")
	}
	return nil
}

// Close writes what is queued, then stops the writer. Record and Ready
// fail after Close.
func (l *AuditLog) Close() {
	l.mu.Lock()
	first := !l.closed
	if first {
		l.closed = true
		close(l.queue)
	}
	running := l.running.Load() // set under mu: Run has started or never will
	l.mu.Unlock()
	switch {
	case running:
		<-l.stopped
	case first: // Run has not started: the accepted calls are written here
		l.write()
	}
	l.pool.Close()
}

// AuditStats counts what an AuditLog did since it started.
type AuditStats struct {
	Events  uint64 // events committed
	Batches uint64 // transactions committed
	Failed  uint64 // events whose transaction failed
}

// Stats returns the counts so far, for metrics.
func (l *AuditLog) Stats() AuditStats {
	return AuditStats{Events: l.events.Load(), Batches: l.batches.Load(), Failed: l.failed.Load()}
}
