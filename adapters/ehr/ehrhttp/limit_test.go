package ehrhttp

import (
	"context"
	"net/http"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestWithLimit_RefusesATurnPastTheDeadline(t *testing.T) {
	lim := rate.NewLimiter(rate.Every(time.Hour), 1)
	calls := 0
	d := withLimit(lim, nil)(func(context.Context, *http.Request) (*http.Response, error) {
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

func TestWithLimit_NoLimiterIsNoLayer(t *testing.T) {
	sent := false
	d := withLimit(nil, nil)(func(context.Context, *http.Request) (*http.Response, error) {
		sent = true
		return nil, nil
	})
	_, _ = d(context.Background(), nil)
	if !sent {
		t.Error("without a limiter the request was not sent")
	}
}
