package ehrhttp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func TestSend_ReplaysTheBodyOnLaterAttempts(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("payload"))
	d := send(srv.Client())
	ctx, _ := withCall(context.Background())
	for range 2 {
		resp, err := d(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		discard(resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != "payload" || bodies[1] != "payload" {
		t.Errorf("the EHR received %q, want the payload twice", bodies)
	}
}

func TestSend_AFailedExchangeIsANetworkFailure(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	_, err := send(http.DefaultClient)(context.Background(), req)
	if f := asFailure(err); f == nil || f.kind != failNetwork {
		t.Errorf("closed server: %v, want a failNetwork", err)
	}
}
