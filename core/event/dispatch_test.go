package event

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoff_FirstRetryWithinHalfToFullBase(t *testing.T) {
	for _, c := range []Config{{}, {RetryBase: 10 * time.Second}, {RetryBase: time.Minute, MaxDelay: time.Hour}} {
		base := c.withDefaults().RetryBase
		for _, r := range []float64{0, 0.25, 0.5, 0.999999} {
			got := c.Backoff(1, r)
			if got < base/2 || got > base {
				t.Errorf("base %v: Backoff(1, %v) = %v, want in [%v, %v]", base, r, got, base/2, base)
			}
		}
	}
	// The contract: the first retry within 60 s.
	if got := (Config{}).Backoff(1, 0); got != DefaultRetryBase || got > time.Minute {
		t.Errorf("default Backoff(1, 0) = %v, want %v", got, DefaultRetryBase)
	}
}

func TestBackoff_DoublesUpToMaxDelay(t *testing.T) {
	c := Config{RetryBase: time.Second, MaxDelay: time.Minute}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, w := range want {
		if got := c.Backoff(i+1, 0); got != w*time.Second {
			t.Errorf("Backoff(%d, 0) = %v, want %v", i+1, got, w*time.Second)
		}
	}
	if got := c.Backoff(3, 0.5); got != 3*time.Second {
		t.Errorf("Backoff(3, 0.5) = %v, want 3s", got)
	}
	if got := c.Backoff(100, 0.5); got != 45*time.Second {
		t.Errorf("Backoff(100, 0.5) = %v, want 45s", got)
	}
}

func TestBackoff_NeverNegativeNorOverflows(t *testing.T) {
	configs := []Config{{}, {RetryBase: time.Nanosecond, MaxDelay: time.Hour},
		{RetryBase: 7 * time.Second, MaxDelay: 1000 * time.Hour},
		{RetryBase: 3 * time.Minute, MaxDelay: 1 << 62}, // shifting would wrap
		{RetryBase: time.Duration(math.MaxInt64), MaxDelay: time.Duration(math.MaxInt64)}}
	for _, c := range configs {
		max := c.withDefaults().MaxDelay
		for _, r := range []float64{0, 0.5, 0.999999} {
			prev := time.Duration(0)
			for n := 1; n <= 300; n++ {
				got := c.Backoff(n, r)
				if got <= 0 || got > max || got < prev {
					t.Fatalf("%+v: Backoff(%d, %v) = %v after %v", c, n, r, got, prev)
				}
				prev = got
			}
			for _, n := range []int{0, -1, 1000, math.MaxInt} {
				if got := c.Backoff(n, r); got <= 0 || got > max {
					t.Errorf("%+v: Backoff(%d, %v) = %v", c, n, r, got)
				}
			}
		}
	}
}

func TestOutcome(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Config{}
	d := Delivery{ID: 7, Subscription: "s", Attempt: 3, OccurredAt: t0}
	now := t0.Add(time.Hour)
	fail := Result{Status: 500, Err: "status 500"}
	tests := []struct {
		name   string
		d      Delivery
		r      Result
		now    time.Time
		state  State
		nextAt time.Time
	}{
		{"2xx", d, Result{Status: 200}, now, Delivered, time.Time{}},
		{"299", d, Result{Status: 299}, now, Delivered, time.Time{}},
		{"2xx late", d, Result{Status: 204}, t0.Add(48 * time.Hour), Delivered, time.Time{}},
		{"500", d, fail, now, Pending, now.Add(c.Backoff(3, 0))},
		{"3xx", d, Result{Status: 302, Err: "status 302"}, now, Pending, now.Add(c.Backoff(3, 0))},
		{"3xx without error", d, Result{Status: 301}, now, Pending, now.Add(c.Backoff(3, 0))},
		{"2xx with error", d, Result{Status: 200, Err: "body cut short"}, now, Pending, now.Add(c.Backoff(3, 0))},
		{"timeout", d, Result{Err: "timeout"}, now, Pending, now.Add(c.Backoff(3, 0))},
		{"next exactly at the end", d, fail, t0.Add(DefaultRetryFor - c.Backoff(3, 0)), Pending, t0.Add(DefaultRetryFor)},
		{"next past the end: the last comes at the end", d, fail, t0.Add(DefaultRetryFor - c.Backoff(3, 0) + time.Nanosecond), Pending, t0.Add(DefaultRetryFor)},
		{"at the end", d, fail, t0.Add(DefaultRetryFor), Failed, time.Time{}},
		{"long after", d, fail, t0.Add(48 * time.Hour), Failed, time.Time{}},
	}
	for _, tt := range tests {
		o := c.Outcome(tt.d, tt.r, tt.now, 0)
		want := Outcome{ID: 7, State: tt.state, NextAt: tt.nextAt, Attempt: 3, Result: tt.r}
		if o != want {
			t.Errorf("%s: Outcome = %+v, want %+v", tt.name, o, want)
		}
	}
	if (Result{Status: 302}).OK() || (Result{Status: 200, Err: "x"}).OK() || (Result{}).OK() || !(Result{Status: 201}).OK() {
		t.Error("Result.OK is not exactly: 2xx and no error")
	}
}

func TestOutcome_RetriesFor24HoursThenFails(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	end := t0.Add(24 * time.Hour)
	c := Config{}
	for _, rnd := range []float64{0, 0.999} {
		d := Delivery{ID: 1, Attempt: 1, OccurredAt: t0}
		now := t0 // the first attempt comes at once
		for {
			o := c.Outcome(d, Result{Status: 503, Err: "status 503"}, now, rnd)
			if o.State == Failed {
				break
			}
			if o.State != Pending || !o.NextAt.After(now) || o.NextAt.After(end) {
				t.Fatalf("rnd %v attempt %d at %v: %+v", rnd, d.Attempt, now.Sub(t0), o)
			}
			if d.Attempt == 1 && o.NextAt.Sub(t0) > time.Minute {
				t.Errorf("rnd %v: first retry %v after the event, want within 60 s", rnd, o.NextAt.Sub(t0))
			}
			now = o.NextAt
			d.Attempt++
			if d.Attempt > 1000 {
				t.Fatalf("rnd %v: never failed", rnd)
			}
		}
		if !now.Equal(end) {
			t.Errorf("rnd %v: failed after the attempt at %v, want the last one 24 h after the event", rnd, now.Sub(t0))
		}
		if d.Attempt <= 8 {
			t.Errorf("rnd %v: failed after %d attempts, want more than 8", rnd, d.Attempt)
		}
		t.Logf("rnd %v: %d attempts, the last %v after the event", rnd, d.Attempt, now.Sub(t0))
	}
}

// memQueue is a Queue in memory that claims like the real one: due
// deliveries in order, at most perSub minus inflight of each subscription.
type memQueue struct {
	*QueueMock
	mu         sync.Mutex
	pending    []Delivery
	settled    []Outcome
	settledAt  []time.Time
	claimErrs  []error // returned by the next claims
	settleErrs []error // returned by the next settles
	overclaim  []string
	batch      int // when > 0, the most one claim returns
}

func newMemQueue(ds ...Delivery) *memQueue {
	q := &memQueue{pending: ds}
	q.QueueMock = &QueueMock{
		ClaimFunc: func(ctx context.Context, inflight map[string]int, perSub int, lease time.Duration) ([]Delivery, error) {
			q.mu.Lock()
			defer q.mu.Unlock()
			if len(q.claimErrs) > 0 {
				err := q.claimErrs[0]
				q.claimErrs = q.claimErrs[1:]
				return nil, err
			}
			taken := map[string]int{}
			var out, rest []Delivery
			for _, d := range q.pending {
				if inflight[d.Subscription]+taken[d.Subscription] < perSub && (q.batch == 0 || len(out) < q.batch) {
					taken[d.Subscription]++
					out = append(out, d)
				} else {
					rest = append(rest, d)
				}
			}
			for s, n := range inflight {
				if n > perSub {
					q.overclaim = append(q.overclaim, s)
				}
			}
			q.pending = rest
			return out, nil
		},
		SettleFunc: func(ctx context.Context, outcomes []Outcome) error {
			q.mu.Lock()
			defer q.mu.Unlock()
			if len(q.settleErrs) > 0 {
				err := q.settleErrs[0]
				q.settleErrs = q.settleErrs[1:]
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			for range outcomes {
				q.settledAt = append(q.settledAt, time.Now())
			}
			q.settled = append(q.settled, outcomes...) // a copy: the dispatcher reuses its slice
			return nil
		},
	}
	return q
}

func (q *memQueue) add(ds ...Delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.pending = append(q.pending, ds...)
}

func (q *memQueue) outcomes() []Outcome {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.settled)
}

func delivery(id int64, sub string) Delivery {
	return Delivery{ID: id, Subscription: sub, URL: "https://example.test/" + sub, EventID: fmt.Sprintf("evt_%d", id),
		Body: []byte(`{}`), Attempt: 1, OccurredAt: time.Now()}
}

// run starts d in the bubble and returns what stops it and waits for Run
// to return.
func run(t *testing.T, r interface{ Run(context.Context) }) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
}

// errorLog collects OnError calls.
type errorLog struct {
	mu  sync.Mutex
	ops []string
}

func (l *errorLog) add(op string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops = append(l.ops, op+": "+err.Error())
}

func (l *errorLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

func TestDispatcher_DeliversEachClaimedOnceAndSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ds []Delivery
		for i := range 20 {
			ds = append(ds, delivery(int64(i+1), fmt.Sprintf("sub-%d", i%3)))
		}
		q := newMemQueue(ds...)
		var mu sync.Mutex
		sent := map[int64]int{}
		var settledOK []string
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			if dl, ok := ctx.Deadline(); !ok || dl.Sub(time.Now()) != DefaultTimeout {
				t.Errorf("send of %d: deadline %v, want in %v", d.ID, dl, DefaultTimeout)
			}
			mu.Lock()
			defer mu.Unlock()
			sent[d.ID]++
			return Result{Status: 204}
		}}
		var errs errorLog
		dp := NewDispatcher(q, sender, Config{OnError: errs.add, OnSettle: func(d Delivery, o Outcome) {
			mu.Lock()
			defer mu.Unlock()
			if d.ID != o.ID || o.State != Delivered {
				t.Errorf("OnSettle(%d, %+v)", d.ID, o)
			}
			settledOK = append(settledOK, fmt.Sprint(o.ID))
		}})
		stop := run(t, dp)
		time.Sleep(time.Second)
		stop()

		for _, d := range ds {
			if sent[d.ID] != 1 {
				t.Errorf("delivery %d sent %d times, want once", d.ID, sent[d.ID])
			}
		}
		got := q.outcomes()
		if len(got) != len(ds) {
			t.Fatalf("%d outcomes settled, want %d: %+v", len(got), len(ds), got)
		}
		ids := map[int64]bool{}
		for _, o := range got {
			if o.State != Delivered || o.Attempt != 1 || o.Result != (Result{Status: 204}) || ids[o.ID] {
				t.Errorf("outcome %+v", o)
			}
			ids[o.ID] = true
		}
		if len(settledOK) != len(ds) {
			t.Errorf("OnSettle called %d times, want %d", len(settledOK), len(ds))
		}
		if len(q.SettleCalls()) >= len(ds) {
			t.Errorf("%d settles for %d outcomes: want them batched", len(q.SettleCalls()), len(ds))
		}
		for _, c := range q.ClaimCalls() {
			if c.PerSub != DefaultPerSubscription || c.Lease <= DefaultTimeout {
				t.Errorf("Claim(perSub %d, lease %v)", c.PerSub, c.Lease)
			}
		}
		if e := errs.get(); len(e) > 0 {
			t.Errorf("OnError: %q", e)
		}
	})
}

func TestDispatcher_SlowSubscriptionHoldsOnlyItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue()
		for i := range 6 {
			q.add(delivery(int64(100+i), "slow"))
		}
		for i := range 9 {
			q.add(delivery(int64(200+i), "fast"))
		}
		release := make(chan struct{})
		var mu sync.Mutex
		slowNow, slowMax := 0, 0
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			if d.Subscription != "slow" {
				return Result{Status: 200}
			}
			mu.Lock()
			slowNow++
			slowMax = max(slowMax, slowNow)
			mu.Unlock()
			defer func() {
				mu.Lock()
				slowNow--
				mu.Unlock()
			}()
			select {
			case <-release:
				return Result{Status: 200}
			case <-ctx.Done():
				return Result{Err: ctx.Err().Error()}
			}
		}}
		dp := NewDispatcher(q, sender, Config{PerSubscription: 2, Timeout: time.Hour, Poll: time.Second})
		stop := run(t, dp)
		defer stop()

		time.Sleep(100 * time.Millisecond)
		delivered := func(sub string) int {
			n := 0
			for _, o := range q.outcomes() {
				if o.State == Delivered && (o.ID >= 200) == (sub == "fast") {
					n++
				}
			}
			return n
		}
		mu.Lock()
		now, most := slowNow, slowMax
		mu.Unlock()
		if now != 2 || most != 2 {
			t.Errorf("slow sends in flight: %d now, %d at most; want 2", now, most)
		}
		if n := delivered("fast"); n != 9 {
			t.Errorf("%d of 9 fast deliveries delivered while slow was blocked", n)
		}
		if n := delivered("slow"); n != 0 {
			t.Errorf("%d slow deliveries delivered before their receiver answered", n)
		}

		close(release)
		time.Sleep(100 * time.Millisecond)
		if n := delivered("slow"); n != 6 {
			t.Errorf("%d of 6 slow deliveries delivered once released", n)
		}
		mu.Lock()
		most = slowMax
		mu.Unlock()
		if most != 2 {
			t.Errorf("at most %d slow sends in flight, want 2", most)
		}
		q.mu.Lock()
		if len(q.overclaim) > 0 {
			t.Errorf("inflight passed to Claim above perSub for %q", q.overclaim)
		}
		q.mu.Unlock()
	})
}

func TestDispatcher_TimesOutASilentReceiver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue(delivery(1, "dead"))
		start := time.Now()
		var took time.Duration
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			<-ctx.Done()
			took = time.Since(start)
			return Result{Err: "timeout"}
		}}
		stop := run(t, NewDispatcher(q, sender, Config{}))
		time.Sleep(DefaultTimeout + time.Second)
		stop()
		if took != DefaultTimeout {
			t.Errorf("attempt cut after %v, want %v", took, DefaultTimeout)
		}
		if got := q.outcomes(); len(got) != 1 || got[0].State != Pending {
			t.Errorf("outcomes %+v, want one pending", got)
		}
	})
}

func TestDispatcher_FailuresArePendingWithANextAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		old := delivery(2, "s")
		old.OccurredAt = time.Now().Add(-DefaultRetryFor)
		old.Attempt = 20
		q := newMemQueue(delivery(1, "s"), old)
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			return Result{Status: 500, Err: "status 500"}
		}}
		stop := run(t, NewDispatcher(q, sender, Config{}))
		time.Sleep(time.Second)
		stop()
		got := q.outcomes()
		if len(got) != 2 {
			t.Fatalf("outcomes %+v, want 2", got)
		}
		for i, o := range got {
			switch o.ID {
			case 1:
				at := q.settledAt[i]
				if o.State != Pending || !o.NextAt.After(at) || o.NextAt.After(at.Add(DefaultRetryBase)) ||
					o.Attempt != 1 || o.Result.Status != 500 {
					t.Errorf("outcome %+v settled at %v, want pending within %v", o, at, DefaultRetryBase)
				}
			case 2:
				if o.State != Failed || o.Attempt != 20 {
					t.Errorf("outcome %+v, want failed", o)
				}
			}
		}
	})
}

func TestDispatcher_WakeClaimsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue()
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result { return Result{Status: 200} }}
		dp := NewDispatcher(q, sender, Config{Poll: time.Hour})
		stop := run(t, dp)
		defer stop()

		synctest.Wait()
		claims := len(q.ClaimCalls())
		if claims != 1 {
			t.Fatalf("%d claims at start, want 1", claims)
		}
		q.add(delivery(1, "s"))
		time.Sleep(time.Minute)
		if n := len(q.ClaimCalls()); n != claims || len(sender.SendCalls()) != 0 {
			t.Fatalf("%d claims and %d sends without a wake or a poll", n, len(sender.SendCalls()))
		}
		dp.Wake()
		time.Sleep(20 * time.Millisecond)
		if got := q.outcomes(); len(got) != 1 || got[0].State != Delivered {
			t.Errorf("after Wake: outcomes %+v, want one delivered", got)
		}
		dp.Wake()
		dp.Wake() // never blocks
	})
}

func TestDispatcher_StopCancelsSendsAndSettlesOnlyFinished(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue(delivery(1, "slow"), delivery(2, "fast"))
		cancelled := make(chan error, 1)
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			if d.Subscription == "fast" {
				return Result{Status: 200}
			}
			<-ctx.Done()
			cancelled <- ctx.Err()
			return Result{Err: ctx.Err().Error()}
		}}
		var settledSeen []int64
		stop := run(t, NewDispatcher(q, sender, Config{Timeout: time.Hour, OnSettle: func(d Delivery, o Outcome) {
			settledSeen = append(settledSeen, o.ID)
		}}))
		synctest.Wait() // both sent, fast finished, its outcome not yet settled
		if n := len(q.SettleCalls()); n != 0 {
			t.Fatalf("%d settles before the batch time", n)
		}
		stop()
		select {
		case err := <-cancelled:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("slow send ended with %v, want cancelled", err)
			}
		default:
			t.Error("the slow send was not cancelled")
		}
		got := q.outcomes()
		if len(got) != 1 || got[0].ID != 2 || got[0].State != Delivered {
			t.Errorf("outcomes %+v, want only delivery 2 delivered", got)
		}
		if !slices.Equal(settledSeen, []int64{2}) {
			t.Errorf("OnSettle for %v, want [2]", settledSeen)
		}
		if n := len(sender.SendCalls()); n != 2 {
			t.Errorf("%d sends, want 2", n)
		}
	})
}

func TestDispatcher_QueueErrorsAreReportedAndRunGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue(delivery(1, "s"))
		q.claimErrs = []error{errors.New("db down")}
		q.settleErrs = []error{errors.New("db gone")}
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result { return Result{Status: 200} }}
		var errs errorLog
		var mu sync.Mutex
		var settledIDs []int64
		onSettle := func() []int64 {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(settledIDs)
		}
		dp := NewDispatcher(q, sender, Config{OnError: errs.add, OnSettle: func(d Delivery, o Outcome) {
			mu.Lock()
			defer mu.Unlock()
			settledIDs = append(settledIDs, o.ID)
		}})
		stop := run(t, dp)
		defer stop()

		synctest.Wait()
		if got := errs.get(); !slices.Equal(got, []string{"claim deliveries: db down"}) {
			t.Fatalf("OnError %q after a failed claim", got)
		}
		time.Sleep(DefaultPoll + 50*time.Millisecond) // the next poll claims
		if got := errs.get(); !slices.Equal(got, []string{"claim deliveries: db down", "settle deliveries: db gone"}) {
			t.Fatalf("OnError %q after a failed settle", got)
		}
		if len(sender.SendCalls()) != 1 || len(onSettle()) != 0 || len(q.outcomes()) != 0 {
			t.Fatalf("%d sends, OnSettle %v, outcomes %v", len(sender.SendCalls()), onSettle(), q.outcomes())
		}

		q.add(delivery(2, "s")) // and 1 comes back once its lease ends
		dp.Wake()
		time.Sleep(50 * time.Millisecond)
		if got := q.outcomes(); len(got) != 1 || got[0].ID != 2 || got[0].State != Delivered {
			t.Errorf("outcomes %+v after the errors, want delivery 2 delivered", got)
		}
		if got := onSettle(); !slices.Equal(got, []int64{2}) {
			t.Errorf("OnSettle for %v, want [2]", got)
		}
	})
}

func TestDispatcher_ClaimsAgainWhileClaimsReturnWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := newMemQueue(delivery(1, "a"), delivery(2, "b"), delivery(3, "c"), delivery(4, "d"), delivery(5, "e"))
		q.batch = 2
		sender := &SenderMock{SendFunc: func(ctx context.Context, d Delivery) Result {
			<-ctx.Done() // no attempt finishes to ask for a claim
			return Result{Err: ctx.Err().Error()}
		}}
		stop := run(t, NewDispatcher(q, sender, Config{Poll: time.Hour, Timeout: time.Hour}))
		defer stop()
		time.Sleep(10 * time.Millisecond)
		if n := len(sender.SendCalls()); n != 5 {
			t.Errorf("%d of 5 deliveries in flight: a claim that returned work did not lead to the next", n)
		}
	})
}
