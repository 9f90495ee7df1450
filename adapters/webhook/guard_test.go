package webhook_test

import (
	"context"
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/webhook"
	"github.com/carebridge/carebridge/core/event"
)

type staticDNS map[string]string

func (d staticDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := d[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// A practice's delivery (Guarded) never connects to a loopback address,
// by IP or by a name that resolves there; the operator's does, and so
// does a practice's with AllowPrivate.
func TestSender_GuardedDeliveriesNeverReachPrivateAddresses(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { hits.Add(1) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	sealer := newSealer(t)
	_, sec := webhook.Secrets{Sealer: sealer}.New("s1")
	dns := staticDNS{"rebound.example": "127.0.0.1"}
	d := func(url string, guarded bool) event.Delivery {
		return event.Delivery{ID: 1, Subscription: "s1", URL: url, Secret: sec, EventID: "evt_1", Body: []byte(`{"id":"evt_1"}`), Attempt: 1, Guarded: guarded}
	}
	guardedURLs := []string{srv.URL, "http://rebound.example:" + strconv.Itoa(port) + "/", "http://[::ffff:127.0.0.1]:" + strconv.Itoa(port) + "/"}

	s := webhook.New(sealer, 0, webhook.WithResolver(dns))
	for _, u := range guardedURLs {
		r := s.Send(context.Background(), d(u, true))
		if r.OK() || !strings.Contains(r.Err, "address not allowed") || !strings.Contains(r.Err, "127.0.0.1") {
			t.Errorf("%s guarded: %+v, want refused naming the address", u, r)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the loopback receiver was reached %d times", hits.Load())
	}
	if r := s.Send(context.Background(), d(srv.URL, false)); !r.OK() {
		t.Errorf("the operator's delivery: %+v", r)
	}
	open := webhook.New(sealer, 0, webhook.WithResolver(dns), webhook.AllowPrivate(true))
	for _, u := range []string{guardedURLs[0], guardedURLs[2]} { // the system's resolver knows no rebound.example
		if r := open.Send(context.Background(), d(u, true)); !r.OK() {
			t.Errorf("%s with AllowPrivate: %+v", u, r)
		}
	}
}

// During a rotation's overlap a delivery carries both signatures, each
// verifying with its own secret.
func TestSender_SignsWithBothSecretsDuringARotation(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }))
	defer srv.Close()
	sealer := newSealer(t)
	oldText, oldSealed := webhook.Secrets{Sealer: sealer}.New("s1")
	newText, newSealed := webhook.Secrets{Sealer: sealer}.New("s1")
	body := []byte(`{"id":"evt_1"}`)
	r := webhook.New(sealer, 0).Send(context.Background(), event.Delivery{ID: 1, Subscription: "s1", URL: srv.URL,
		Secret: newSealed, PreviousSecret: oldSealed, EventID: "evt_1", Body: body, Attempt: 1})
	if !r.OK() {
		t.Fatal(r)
	}
	sigs := strings.Fields(got.Get("webhook-signature"))
	if len(sigs) != 2 {
		t.Fatalf("signatures %v, want two", sigs)
	}
	for i, text := range []string{newText, oldText} {
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(text, "whsec_"))
		h := got.Clone()
		h.Set("webhook-signature", sigs[i])
		if err := verifyStandardWebhook(text, h, body, time.Now()); err != nil || len(key) != 32 {
			t.Errorf("signature %d: %v", i, err)
		}
	}
}
