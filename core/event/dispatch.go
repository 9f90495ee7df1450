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

// Run delivers until ctx is done. Then it stops the attempts in flight
// (they are delivered again once their lease ends) and records what
// finished.
func (d *Dispatcher) Run(ctx context.Context) {
	sendCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	done := make(chan attempt, 64)
	inflight := map[string]int{}
	// backlog holds the subscriptions whose last claim filled every slot:
	// once half of them are free, the dispatcher claims again, in a batch,
	// rather than once per finished attempt.
	backlog := map[string]bool{}
	var outcomes []Outcome
	var delivered []Delivery

	poll := time.NewTicker(d.cfg.Poll)
	defer poll.Stop()
	var claimT, settleT *time.Timer
	var claimC, settleC <-chan time.Time
	want, last := true, time.Time{}

	settle := func(ctx context.Context) {
		if len(outcomes) == 0 {
			return
		}
		if err := d.queue.Settle(ctx, outcomes); err != nil {
			d.cfg.OnError("settle deliveries", err)
		} else {
			for i, o := range outcomes {
				d.cfg.OnSettle(delivered[i], o)
			}
		}
		outcomes, delivered = outcomes[:0], delivered[:0]
		if settleT != nil {
			settleT.Stop()
			settleC = nil
		}
	}
	for {
		if want && claimC == nil && ctx.Err() == nil {
			if wait := claimGap - d.now().Sub(last); wait > 0 {
				claimT = time.NewTimer(wait)
				claimC = claimT.C
			} else {
				last = d.now()
				before := maps.Clone(inflight)
				ds, err := d.queue.Claim(ctx, inflight, d.cfg.PerSubscription, d.cfg.lease())
				if err != nil && ctx.Err() == nil {
					d.cfg.OnError("claim deliveries", err)
				}
				for _, dl := range ds {
					inflight[dl.Subscription]++
					if inflight[dl.Subscription] == d.cfg.PerSubscription {
						backlog[dl.Subscription] = true // it took all it could: more may wait
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						actx, cancel := context.WithTimeout(sendCtx, d.cfg.Timeout)
						r := d.sender.Send(actx, dl)
						cancel()
						if sendCtx.Err() != nil {
							r = Result{Err: "stopped"}
						}
						done <- attempt{dl, r}
					}()
				}
				for sub := range backlog { // it had room and took less: none waits
					if before[sub] < d.cfg.PerSubscription && inflight[sub] < d.cfg.PerSubscription {
						delete(backlog, sub)
					}
				}
				// A claim that found work looks again after claimGap:
				// more may be due than one claim took.
				if want = len(ds) > 0; want {
					claimT = time.NewTimer(claimGap)
					claimC = claimT.C
				}
			}
		}
		select {
		case <-ctx.Done():
			stop()
			go func() { wg.Wait(); close(done) }()
			for a := range done {
				if a.r.Err != "stopped" {
					outcomes = append(outcomes, d.cfg.Outcome(a.d, a.r, d.now(), rand.Float64()))
					delivered = append(delivered, a.d)
				}
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			settle(sctx)
			cancel()
			return
		case <-d.wake:
			want = true
		case <-poll.C:
			want = true
		case <-claimC:
			claimC = nil
		case a := <-done:
			inflight[a.d.Subscription]--
			if inflight[a.d.Subscription] == 0 {
				delete(inflight, a.d.Subscription)
			}
			outcomes = append(outcomes, d.cfg.Outcome(a.d, a.r, d.now(), rand.Float64()))
			delivered = append(delivered, a.d)
			if backlog[a.d.Subscription] && inflight[a.d.Subscription] <= d.cfg.PerSubscription/2 {
				delete(backlog, a.d.Subscription)
				want = true
			}
			if len(outcomes) >= settleBatch {
				settle(ctx)
			} else if settleC == nil {
				settleT = time.NewTimer(settleEvery)
				settleC = settleT.C
			}
		case <-settleC:
			settleC = nil
			settle(ctx)
		}
	}
}
