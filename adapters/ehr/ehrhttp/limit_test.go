package ehrhttp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
)

func TestWithLimit_RefusesATurnPastTheDeadline(t *testing.T) {
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	calls := 0
	d := withLimit(lim, 2*time.Hour, nil)(func(context.Context, *http.Request) (*http.Response, error) {
		calls++
		return &http.Response{StatusCode: 200}, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := d(ctx, nil); err != nil {
		t.Fatalf("first request (the burst): %v", err)
	}
	_, err := d(ctx, nil)
	f := asFailure(err)
	if f == nil || f.kind != failLimited || f.wait <= time.Minute || calls != 1 {
		t.Fatalf("second request: %v (%+v), calls %d; want failLimited with the wait, not sent", err, f, calls)
	}
}

// Without a deadline of the caller's, our queue still has its own bound,
// and a refusal of it says nothing of the EHR.
func TestWithLimit_RefusesATurnPastItsOwnBound(t *testing.T) {
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	calls := 0
	d := withLimit(lim, time.Second, nil)(func(context.Context, *http.Request) (*http.Response, error) {
		calls++
		return &http.Response{StatusCode: 200}, nil
	})
	if _, err := d(context.Background(), nil); err != nil {
		t.Fatalf("first request (the burst): %v", err)
	}
	_, err := d(context.Background(), nil)
	f := asFailure(err)
	if f == nil || f.kind != failLimited || f.wait <= time.Second || calls != 1 {
		t.Fatalf("second request: %v (%+v), calls %d; want failLimited with the wait, not sent", err, f, calls)
	}
	if v := judge(nil, err); v != ehrclient.Ignore {
		t.Errorf("the breaker's verdict on a refusal of our own queue is %v, want Ignore", v)
	}
}

// A caller that cancels while it waits for its turn ends the attempt as
// its own failure, not our queue's refusal.
func TestWithLimit_ACancelledWaitIsTheCallers(t *testing.T) {
	lim := rate.NewLimiter(rate.Every(time.Minute), 1)
	lim.Allow() // the burst is spent: the next turn is a minute away
	d := withLimit(lim, time.Hour, nil)(func(context.Context, *http.Request) (*http.Response, error) {
		t.Error("sent")
		return nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(10*time.Millisecond, cancel)
	defer stop.Stop()
	_, err := d(ctx, nil)
	if f := asFailure(err); f == nil || f.kind != failCaller {
		t.Errorf("%v (%+v), want the caller's failure", err, f)
	}
}

func TestWithLimit_NoLimiterIsNoLayer(t *testing.T) {
	sent := false
	d := withLimit(nil, time.Second, nil)(func(context.Context, *http.Request) (*http.Response, error) {
		sent = true
		return nil, nil
	})
	_, _ = d(context.Background(), nil)
	if !sent {
		t.Error("without a limiter the request was not sent")
	}
}
