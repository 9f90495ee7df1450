package ehrhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestWhose_TellsTheCallersEndFromTheAttempts(t *testing.T) {
	live := context.Background()
	cancelled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel2()
	network := &failure{kind: failNetwork, err: errors.New("reset")}
	limited := &failure{kind: failLimited, err: errors.New("turn")}
	tests := []struct {
		name      string
		ctx, actx context.Context
		err       error
		want      failKind
	}{
		{"network, both live", live, live, network, failNetwork},
		{"network, attempt expired", live, expired, network, failTimeout},
		{"network, caller expired", expired, expired, network, failTimeout},
		{"network, caller cancelled", cancelled, cancelled, network, failCaller},
		{"limiter, caller live", live, expired, limited, failLimited},
		{"limiter, caller expired", expired, expired, limited, failCaller},
	}
	for _, tt := range tests {
		f := asFailure(whose(tt.ctx, tt.actx, tt.err))
		if f == nil || f.kind != tt.want {
			t.Errorf("%s: got %+v, want kind %d", tt.name, f, tt.want)
		}
	}
}

func TestWithTimeout_EndsTheAttemptWhenTheBodyIsClosed(t *testing.T) {
	var actx context.Context
	d := withTimeout(time.Hour)(func(ctx context.Context, _ *http.Request) (*http.Response, error) {
		actx = ctx
		return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("ok"))}, nil
	})
	resp, err := d(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if actx.Err() != nil {
		t.Fatal("the attempt ended before its body was closed")
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	_ = resp.Body.Close()
	if actx.Err() == nil {
		t.Error("the attempt is still live after its body was closed")
	}
}
