package event

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/carebridge/carebridge/core"
)

// memStream is a Stream in memory: unpublished messages oldest first; a
// claimed one is claimable again at once unless marked (the relay only
// claims again after it gave up on a batch).
type memStream struct {
	*StreamMock
	mu          sync.Mutex
	unpublished []Message
	published   []int64
	markErrs    []error
}

func newMemStream(n int) *memStream {
	s := &memStream{}
	s.addN(n)
	s.StreamMock = &StreamMock{
		ClaimUnpublishedFunc: func(ctx context.Context, n int, lease time.Duration) ([]Message, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			return slices.Clone(s.unpublished[:min(n, len(s.unpublished))]), nil
		},
		MarkPublishedFunc: func(ctx context.Context, seqs []int64) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.markErrs) > 0 {
				err := s.markErrs[0]
				s.markErrs = s.markErrs[1:]
				return err
			}
			s.published = append(s.published, seqs...)
			s.unpublished = slices.DeleteFunc(s.unpublished, func(m Message) bool { return slices.Contains(seqs, m.Seq) })
			return nil
		},
	}
	return s
}

func (s *memStream) addN(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := int64(len(s.published) + len(s.unpublished))
	for range n {
		seq++
		s.unpublished = append(s.unpublished, Message{Seq: seq, ID: fmt.Sprintf("evt_%d", seq), Type: core.BlobUploaded, Body: []byte(`{}`)})
	}
}

func (s *memStream) marked() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.published)
}

// failingPublisher fails its first len(errs) publishes.
func failingPublisher(errs ...error) *PublisherMock {
	var mu sync.Mutex
	return &PublisherMock{PublishFunc: func(ctx context.Context, msgs []Message) error {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) > 0 {
			err := errs[0]
			errs = errs[1:]
			return err
		}
		return nil
	}}
}

func seqs(from, to int64) []int64 {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return s
}

func TestRelay_PublishesAndMarks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStream(3)
		pub := failingPublisher()
		var errs errorLog
		r := NewRelay(s, pub, time.Hour, errs.add)
		var mu sync.Mutex
		var counts []int
		r.OnPublished = func(n int) {
			mu.Lock()
			defer mu.Unlock()
			counts = append(counts, n)
		}
		stop := run(t, r)
		synctest.Wait()

		calls := pub.PublishCalls()
		if len(calls) != 1 || len(calls[0].Msgs) != 3 || calls[0].Msgs[0].ID != "evt_1" || calls[0].Msgs[2].Seq != 3 {
			t.Fatalf("Publish calls %+v, want one of 3 messages, oldest first", calls)
		}
		if got := s.marked(); !slices.Equal(got, seqs(1, 3)) {
			t.Errorf("marked %v, want [1 2 3]", got)
		}
		for _, c := range s.ClaimUnpublishedCalls() {
			if c.N != relayBatch || c.Lease <= 0 {
				t.Errorf("ClaimUnpublished(%d, %v)", c.N, c.Lease)
			}
		}
		mu.Lock()
		if !slices.Equal(counts, []int{3}) {
			t.Errorf("OnPublished %v, want [3]", counts)
		}
		mu.Unlock()

		s.addN(2)
		r.Wake()
		synctest.Wait()
		if got := s.marked(); !slices.Equal(got, seqs(1, 5)) {
			t.Errorf("marked %v after a wake, want [1 … 5]", got)
		}
		stop()
		if e := errs.get(); len(e) > 0 {
			t.Errorf("onError %q", e)
		}
	})
}

func TestRelay_PublishErrorIsNotMarkedAndRetriedAfterAPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStream(2)
		pub := failingPublisher(errors.New("nats down"), errors.New("nats still down"))
		var errs errorLog
		r := NewRelay(s, pub, time.Hour, errs.add)
		stop := run(t, r)
		defer stop()

		synctest.Wait()
		if got := errs.get(); !slices.Equal(got, []string{"publish events: nats down"}) {
			t.Fatalf("onError %q", got)
		}
		if n := len(s.MarkPublishedCalls()); n != 0 {
			t.Fatalf("%d marks after a failed publish", n)
		}
		time.Sleep(time.Second - time.Millisecond)
		if n := len(pub.PublishCalls()); n != 1 {
			t.Fatalf("%d publishes within a second of the failure, want 1", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := len(pub.PublishCalls()); n != 2 {
			t.Fatalf("%d publishes a second after the failure, want 2", n)
		}
		// A second failure in a row pauses twice as long.
		time.Sleep(2*time.Second - time.Millisecond)
		if n := len(pub.PublishCalls()); n != 2 {
			t.Fatalf("%d publishes within 2 s of the second failure, want 2", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := s.marked(); !slices.Equal(got, seqs(1, 2)) {
			t.Errorf("marked %v after the retry, want [1 2]", got)
		}
		if got := pub.PublishCalls(); len(got) != 3 || len(got[2].Msgs) != 2 {
			t.Errorf("publishes %+v", got)
		}
		if got := errs.get(); len(got) != 2 {
			t.Errorf("onError %q, want 2", got)
		}
	})
}

func TestRelay_MarkErrorIsReportedAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStream(1)
		s.markErrs = []error{errors.New("db down")}
		var errs errorLog
		r := NewRelay(s, failingPublisher(), time.Hour, errs.add)
		stop := run(t, r)
		defer stop()
		time.Sleep(time.Second + time.Millisecond)
		if got := errs.get(); !slices.Equal(got, []string{"mark events published: db down"}) {
			t.Errorf("onError %q", got)
		}
		if got := s.marked(); !slices.Equal(got, []int64{1}) {
			t.Errorf("marked %v, want [1]", got)
		}
	})
}

func TestRelay_FullBatchClaimsAgainAtOnce(t *testing.T) {
	for _, tt := range []struct {
		n, claims int
	}{{relayBatch - 1, 1}, {relayBatch, 2}, {relayBatch + 1, 2}, {2 * relayBatch, 3}} {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := newMemStream(tt.n)
				pub := failingPublisher()
				stop := run(t, NewRelay(s, pub, time.Hour, nil))
				defer stop()
				synctest.Wait() // no time passes: only a full batch claims again
				if n := len(s.ClaimUnpublishedCalls()); n != tt.claims {
					t.Errorf("%d claims, want %d", n, tt.claims)
				}
				if got := s.marked(); !slices.Equal(got, seqs(1, int64(tt.n))) {
					t.Errorf("marked %d of %d", len(got), tt.n)
				}
				for _, c := range pub.PublishCalls() {
					if len(c.Msgs) > relayBatch {
						t.Errorf("a publish of %d messages", len(c.Msgs))
					}
				}
			})
		})
	}
}

func TestRelay_PollsWithoutAWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMemStream(0)
		stop := run(t, NewRelay(s, failingPublisher(), 0, nil)) // the default poll
		defer stop()
		synctest.Wait()
		s.addN(1)
		time.Sleep(DefaultPoll + time.Millisecond)
		if got := s.marked(); !slices.Equal(got, []int64{1}) {
			t.Errorf("marked %v a poll later, want [1]", got)
		}
	})
}

func TestRelay_StopsWhenCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, fail := range []bool{false, true} {
			s := newMemStream(1)
			var pub *PublisherMock
			if fail {
				pub = &PublisherMock{PublishFunc: func(context.Context, []Message) error { return errors.New("down") }}
			} else {
				pub = failingPublisher()
			}
			var errs errorLog
			stop := run(t, NewRelay(s, pub, time.Hour, errs.add))
			time.Sleep(3 * time.Second) // idle, or in a pause after failures
			start := time.Now()
			stop()
			if took := time.Since(start); took != 0 {
				t.Errorf("fail %v: Run returned %v after cancel", fail, took)
			}
			n := len(s.ClaimUnpublishedCalls())
			time.Sleep(time.Hour)
			if len(s.ClaimUnpublishedCalls()) != n {
				t.Errorf("fail %v: claims after Run returned", fail)
			}
			if fail && len(errs.get()) == 0 {
				t.Error("failing publisher: no onError")
			}
		}
	})
}
