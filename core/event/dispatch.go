package event

import (
	"context"
	"maps"
	"math/rand/v2"
	"sync"
	"time"
)

// Delivery defaults of the contract, and of this service.
const (
	// DefaultTimeout bounds one attempt: a receiver that has not answered
	// in full by then failed it.
	DefaultTimeout = 10 * time.Second
	// DefaultRetryBase is the first retry's delay; each later one doubles,
	// and each is jittered down by up to half, so the first retry comes
	// within 30 s.
	DefaultRetryBase = 30 * time.Second
	// DefaultMaxDelay caps one delay between attempts.
	DefaultMaxDelay = 4 * time.Hour
	// DefaultRetryFor is how long after the event a delivery is retried
	// before it is marked failed.
	DefaultRetryFor = 24 * time.Hour
	// DefaultPerSubscription is how many deliveries to one subscription an
	// instance has in flight at most: a slow or dead receiver holds only
	// its own.
	DefaultPerSubscription = 16
	// DefaultPoll is how often an instance looks for due deliveries when
	// nothing woke it (a retry coming due, a lost notification).
	DefaultPoll = time.Second
)

// Config tunes a Dispatcher; zero fields take the defaults.
type Config struct {
	Timeout         time.Duration
	RetryBase       time.Duration
	MaxDelay        time.Duration
	RetryFor        time.Duration
	PerSubscription int
	Poll            time.Duration
	// OnSettle, when set, is told every attempt's outcome (metrics).
	OnSettle func(d Delivery, o Outcome)
	// OnError, when set, is told of every failure of the queue (logs).
	OnError func(op string, err error)
}

func (c Config) withDefaults() Config {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Timeout, DefaultTimeout)
	def(&c.RetryBase, DefaultRetryBase)
	def(&c.MaxDelay, DefaultMaxDelay)
	def(&c.RetryFor, DefaultRetryFor)
	def(&c.Poll, DefaultPoll)
	if c.PerSubscription <= 0 {
		c.PerSubscription = DefaultPerSubscription
	}
	if c.OnSettle == nil {
		c.OnSettle = func(Delivery, Outcome) {}
	}
	if c.OnError == nil {
		c.OnError = func(string, error) {}
	}
	return c
}

// lease is how long a claimed delivery stays with its instance: longer
// than an attempt and the settling after it.
func (c Config) lease() time.Duration { return 3*c.Timeout + 30*time.Second }

// Backoff returns the delay before the attempt after failed attempt n
// (1-based): RetryBase·2ⁿ⁻¹, capped at MaxDelay, less a random part of up
// to half of it (jitter spreads the retries of many deliveries); r is a
// random number in [0, 1).
func (c Config) Backoff(n int, r float64) time.Duration {
	c = c.withDefaults()
	d := c.MaxDelay
	// RetryBase·2ⁿ⁻¹ ≤ MaxDelay, tested without the shift that could
	// overflow into a small positive delay.
	if n >= 1 && n < 64 && c.RetryBase <= d>>(n-1) {
		d = c.RetryBase << (n - 1)
	}
	return d - time.Duration(r*float64(d/2))
}

// Outcome returns how delivery d stands after an attempt that came to r
// at now: delivered; pending with its next attempt, which is never later
// than RetryFor after the event (the last one comes right then); or
// failed, when an attempt at or after that time failed.
func (c Config) Outcome(d Delivery, r Result, now time.Time, rnd float64) Outcome {
	c = c.withDefaults()
	o := Outcome{ID: d.ID, Attempt: d.Attempt, Result: r}
	deadline := d.OccurredAt.Add(c.RetryFor)
	switch next := now.Add(c.Backoff(d.Attempt, rnd)); {
	case r.OK():
		o.State = Delivered
	case !now.Before(deadline):
		o.State = Failed
	case next.After(deadline):
		o.State, o.NextAt = Pending, deadline
	default:
		o.State, o.NextAt = Pending, next
	}
	return o
}

// Dispatcher delivers the outbox's events to the webhook subscriptions.
// Every instance runs one; they share the work through the Queue's
// claims.
type Dispatcher struct {
	queue  Queue
	sender Sender
	cfg    Config
	wake   chan struct{}
	now    func() time.Time
}

// NewDispatcher returns a dispatcher of queue's deliveries through sender.
func NewDispatcher(queue Queue, sender Sender, cfg Config) *Dispatcher {
	return &Dispatcher{queue: queue, sender: sender, cfg: cfg.withDefaults(), wake: make(chan struct{}, 1), now: time.Now}
}

// Wake tells the dispatcher that events were written: it looks for due
// deliveries at once instead of at its next poll.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// claimGap spaces claims that attempts finishing ask for, so a busy
// dispatcher claims in batches rather than once per attempt.
const claimGap = 2 * time.Millisecond

// settleBatch and settleEvery bound how many outcomes wait to be
// recorded, and for how long.
const (
	settleBatch = 256
	settleEvery = 5 * time.Millisecond
)

type attempt struct {
	d Delivery
	r Result
}

// errStopped marks an attempt cut off by Run's end: it is not settled, so
// its lease makes it due again.
const errStopped = "stopped"

// runner is the state of one Run: the attempts in flight, by subscription,
// and the outcomes waiting to be settled.
type runner struct {
	*Dispatcher
	sendCtx context.Context // the attempts' context, ended when Run ends
	wg      sync.WaitGroup
	done    chan attempt
	// inflight counts this instance's attempts per subscription.
	inflight map[string]int
	// backlog holds the subscriptions whose last claim filled every slot:
	// once half of them are free, the dispatcher claims again, in a
	// batch, rather than once per finished attempt.
	backlog   map[string]bool
	outcomes  []Outcome
	delivered []Delivery // the delivery of each outcome
}

// Run delivers until ctx is done. Then it stops the attempts in flight
// (they are delivered again once their lease ends) and records what
// finished.
func (d *Dispatcher) Run(ctx context.Context) {
	sendCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &runner{Dispatcher: d, sendCtx: sendCtx, done: make(chan attempt, 64),
		inflight: map[string]int{}, backlog: map[string]bool{}}
	poll := time.NewTicker(d.cfg.Poll)
	defer poll.Stop()
	var claimC, settleC <-chan time.Time // armed timers: the next claim, the next settle
	want, last := true, time.Time{}      // a claim is wanted; when the last one was
	for {
		if want && claimC == nil && ctx.Err() == nil {
			if wait := claimGap - d.now().Sub(last); wait > 0 {
				claimC = time.After(wait)
			} else {
				last = d.now()
				// A claim that found work looks again after claimGap:
				// more may be due than one claim took.
				if want = r.claim(ctx); want {
					claimC = time.After(claimGap)
				}
			}
		}
		select {
		case <-ctx.Done():
			stop()
			r.finish(ctx)
			return
		case <-d.wake:
			want = true
		case <-poll.C:
			want = true
		case <-claimC:
			claimC = nil
		case a := <-r.done:
			if r.finished(a) {
				want = true
			}
			if len(r.outcomes) >= settleBatch {
				r.settle(ctx)
				settleC = nil
			} else if settleC == nil {
				settleC = time.After(settleEvery)
			}
		case <-settleC:
			settleC = nil
			r.settle(ctx)
		}
	}
}

// claim leases what is due within this instance's free slots and starts
// an attempt for each; it reports whether it found any.
func (r *runner) claim(ctx context.Context) bool {
	before := maps.Clone(r.inflight)
	ds, err := r.queue.Claim(ctx, r.inflight, r.cfg.PerSubscription, r.cfg.lease())
	if err != nil && ctx.Err() == nil {
		r.cfg.OnError("claim deliveries", err)
	}
	for _, dl := range ds {
		r.inflight[dl.Subscription]++
		if r.inflight[dl.Subscription] == r.cfg.PerSubscription {
			r.backlog[dl.Subscription] = true // it took all it could: more may wait
		}
		r.wg.Add(1)
		go r.send(dl)
	}
	for sub := range r.backlog { // it had room and took less: none waits
		if before[sub] < r.cfg.PerSubscription && r.inflight[sub] < r.cfg.PerSubscription {
			delete(r.backlog, sub)
		}
	}
	return len(ds) > 0
}

// send makes one attempt, within the time-out, and hands its result back.
func (r *runner) send(dl Delivery) {
	defer r.wg.Done()
	actx, cancel := context.WithTimeout(r.sendCtx, r.cfg.Timeout)
	res := r.sender.Send(actx, dl)
	cancel()
	if r.sendCtx.Err() != nil {
		res = Result{Err: errStopped}
	}
	r.done <- attempt{dl, res}
}

// finished records a's outcome for the next settle and reports whether a
// claim is worth making now: a subscription with a backlog has half of
// its slots free.
func (r *runner) finished(a attempt) bool {
	sub := a.d.Subscription
	if r.inflight[sub]--; r.inflight[sub] == 0 {
		delete(r.inflight, sub)
	}
	r.record(a)
	if r.backlog[sub] && r.inflight[sub] <= r.cfg.PerSubscription/2 {
		delete(r.backlog, sub)
		return true
	}
	return false
}

func (r *runner) record(a attempt) {
	r.outcomes = append(r.outcomes, r.cfg.Outcome(a.d, a.r, r.now(), rand.Float64()))
	r.delivered = append(r.delivered, a.d)
}

// settle records the waiting outcomes; a failure is reported, and the
// deliveries are tried again once their leases end.
func (r *runner) settle(ctx context.Context) {
	if len(r.outcomes) == 0 {
		return
	}
	if err := r.queue.Settle(ctx, r.outcomes); err != nil {
		r.cfg.OnError("settle deliveries", err)
	} else {
		for i, o := range r.outcomes {
			r.cfg.OnSettle(r.delivered[i], o)
		}
	}
	r.outcomes, r.delivered = r.outcomes[:0], r.delivered[:0]
}

// finish waits for the attempts in flight (their context has ended) and
// settles those that finished, within 5 s.
func (r *runner) finish(ctx context.Context) {
	go func() { r.wg.Wait(); close(r.done) }()
	for a := range r.done {
		if a.r.Err != errStopped {
			r.record(a)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	r.settle(sctx)
	cancel()
}
