package event

import (
	"context"
	"time"
)

// Relay publishes the outbox's events to a message stream, oldest first.
// Every instance configured with a stream runs one; their claims share
// the work, and a message published twice (an instance that died between
// publishing and marking) is stored once by the stream.
type Relay struct {
	stream  Stream
	pub     Publisher
	wake    chan struct{}
	poll    time.Duration
	onError func(op string, err error)
	// OnPublished, when set, is told how many events reached the stream.
	OnPublished func(n int)
}

// relayBatch is how many events one publish carries at most.
const relayBatch = 256

// NewRelay returns a relay of stream's events to pub; onError is told of
// every failure (nil: ignored).
func NewRelay(stream Stream, pub Publisher, poll time.Duration, onError func(op string, err error)) *Relay {
	if poll <= 0 {
		poll = DefaultPoll
	}
	if onError == nil {
		onError = func(string, error) {}
	}
	return &Relay{stream: stream, pub: pub, wake: make(chan struct{}, 1), poll: poll, onError: onError, OnPublished: func(int) {}}
}

// Wake tells the relay that events were written.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// relayLease is how long claimed events stay with this instance.
const relayLease = time.Minute

// Run publishes until ctx is done. After a failure it waits, one second
// at first and twice as long after each failure in a row, up to a minute.
func (r *Relay) Run(ctx context.Context) {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	pause := time.Duration(0)
	for ctx.Err() == nil {
		n, err := r.once(ctx)
		if err != nil {
			pause = min(max(2*pause, time.Second), time.Minute)
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			continue
		}
		pause = 0
		if n == relayBatch {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
		case <-r.wake:
		case <-t.C:
		}
	}
}

func (r *Relay) once(ctx context.Context) (int, error) {
	msgs, err := r.stream.ClaimUnpublished(ctx, relayBatch, relayLease)
	if err != nil {
		if ctx.Err() == nil {
			r.onError("claim events to publish", err)
		}
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	if err := r.pub.Publish(ctx, msgs); err != nil {
		if ctx.Err() == nil {
			r.onError("publish events", err)
		}
		return 0, err
	}
	seqs := make([]int64, len(msgs))
	for i, m := range msgs {
		seqs[i] = m.Seq
	}
	if err := r.stream.MarkPublished(ctx, seqs); err != nil {
		if ctx.Err() == nil {
			r.onError("mark events published", err)
		}
		return 0, err
	}
	r.OnPublished(len(msgs))
	return len(msgs), nil
}
