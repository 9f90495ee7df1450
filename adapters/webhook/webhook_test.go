package webhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/carebridge/carebridge/adapters/webhook"
	"github.com/carebridge/carebridge/core/event"
)

// verifyStandardWebhook is a reference receiver's check of a delivery, as
// the Standard Webhooks specification describes it, written apart from
// the package: the key is the base64 after "whsec_"; the signature header
// holds space-separated "v1,<base64 HMAC-SHA256 of id.timestamp.body>";
// the timestamp must be within five minutes of now.
func verifyStandardWebhook(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return fmt.Errorf("secret: %w", err)
	}
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return errors.New("missing webhook headers")
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp: %w", err)
	}
	if d := now.Sub(time.Unix(ts, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %d is %v from now", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + tsText + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	for _, sig := range strings.Split(sigs, " ") {
		version, b64, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return errors.New("no signature matches")
}

// request is what a receiver got.
type request struct {
	method string
	header http.Header
	body   []byte
}

// receiver starts a server that records every request and answers status.
func receiver(t *testing.T, status int) (*httptest.Server, <-chan request) {
	t.Helper()
	got := make(chan request, 128)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- request{r.Method, r.Header.Clone(), body}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, "answer-body-must-not-leak")
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// counter starts a server that counts its requests and answers 200.
func counter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	t.Cleanup(srv.Close)
	return srv, &n
}

// delivery returns a delivery to url with a fresh secret, sealed by s,
// and that secret's text.
func delivery(s *webhook.Sealer, url string) (event.Delivery, string) {
	text, raw := webhook.NewSecret()
	return event.Delivery{
		ID: 1, Subscription: "sub_1", URL: url, Secret: s.Seal("sub_1", raw),
		EventID: "evt_0123456789abcdef0123456789abcdef",
		Body:    []byte("{\"type\":\"blob.uploaded\",\"data\":{\"blobId\":7,\"n\":\"é\\u2028\"}}\n"),
		Attempt: 1, OccurredAt: time.Now(),
	}, text
}

func TestSign_MatchesStandardWebhooksVector(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	got := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("Sign = %q, want the specification's %q", got, want)
	}
}

func TestSend_DeliversSignedAsStandardWebhooks(t *testing.T) {
	srv, got := receiver(t, http.StatusOK)
	sealer := newSealer(t)
	d, secret := delivery(sealer, srv.URL+"/hooks?token=abc")

	r := webhook.New(sealer, time.Second).Send(t.Context(), d)
	if !r.OK() || r.Status != 200 || r.Err != "" {
		t.Fatalf("Send = %+v, want status 200 and no error", r)
	}
	req := <-got
	if req.method != http.MethodPost {
		t.Errorf("method = %s, want POST", req.method)
	}
	if string(req.body) != string(d.Body) {
		t.Errorf("body = %q, want exactly %q", req.body, d.Body)
	}
	for name, want := range map[string]string{
		"webhook-id": d.EventID, "Content-Type": "application/json", "User-Agent": "Carebridge-Webhooks/1",
	} {
		if v := req.header.Get(name); v != want {
			t.Errorf("header %s = %q, want %q", name, v, want)
		}
	}
	if err := verifyStandardWebhook(secret, req.header, req.body, time.Now()); err != nil {
		t.Fatalf("reference verification: %v", err)
	}
	ts, _ := strconv.ParseInt(req.header.Get("webhook-timestamp"), 10, 64)
	if d := time.Since(time.Unix(ts, 0)); d < -time.Second || d > 5*time.Second {
		t.Errorf("webhook-timestamp is %v from now, want the time of the attempt", d)
	}
	if other, _ := webhook.NewSecret(); verifyStandardWebhook(other, req.header, req.body, time.Now()) == nil {
		t.Error("signature verifies under another secret")
	}
}

func TestSend_SucceedsOn2xx(t *testing.T) {
	sealer := newSealer(t)
	s := webhook.New(sealer, time.Second)
	for _, status := range []int{200, 201, 202, 204} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv, _ := receiver(t, status)
			d, _ := delivery(sealer, srv.URL)
			if r := s.Send(t.Context(), d); !r.OK() || r.Status != status {
				t.Fatalf("Send = %+v, want success with status %d", r, status)
			}
		})
	}
}

func TestSend_DoesNotFollowRedirects(t *testing.T) {
	sealer := newSealer(t)
	s := webhook.New(sealer, time.Second)
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			target, hits := counter(t)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/elsewhere", status)
			}))
			t.Cleanup(srv.Close)
			d, _ := delivery(sealer, srv.URL)

			r := s.Send(t.Context(), d)
			if r.OK() || r.Status != status {
				t.Fatalf("Send = %+v, want a failure with status %d", r, status)
			}
			if want := fmt.Sprintf("redirect not followed (status %d)", status); r.Err != want {
				t.Errorf("Err = %q, want %q", r.Err, want)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("redirect target got %d requests, want none", n)
			}
		})
	}
}

func TestSend_FailsOnErrorStatusWithoutBodyOrQuery(t *testing.T) {
	sealer := newSealer(t)
	s := webhook.New(sealer, time.Second)
	for _, status := range []int{400, 404, 410, 429, 500, 503} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			srv, _ := receiver(t, status)
			d, _ := delivery(sealer, srv.URL+"/hooks?token=query-must-not-leak")
			r := s.Send(t.Context(), d)
			if r.OK() || r.Status != status {
				t.Fatalf("Send = %+v, want a failure with status %d", r, status)
			}
			if want := "status " + strconv.Itoa(status); r.Err != want {
				t.Errorf("Err = %q, want %q", r.Err, want)
			}
		})
	}
}

func TestSend_TimesOutOnHangingReceiver(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the handler returns, then Close returns
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)

	// The receiver hangs until the test ends: Send returning at all, with
	// the time-out's error, shows the time-out ended it.
	r := webhook.New(sealer, 200*time.Millisecond).Send(t.Context(), d)
	if r.OK() || r.Status != 0 || r.Err != "timed out after 200ms" {
		t.Fatalf("Send = %+v, want status 0 and Err %q", r, "timed out after 200ms")
	}
}

func TestSend_TimesOutWithAttemptContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)

	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
	defer cancel()
	r := webhook.New(sealer, 0).Send(ctx, d)
	if r.OK() || r.Status != 0 || !strings.HasPrefix(r.Err, "timed out after ") {
		t.Fatalf("Send = %+v, want a time-out", r)
	}
}

func TestSend_DrainsOnlyTheStartOfAHugeAnswer(t *testing.T) {
	const huge = 50 << 20
	written := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(huge))
		w.WriteHeader(http.StatusOK)
		chunk := make([]byte, 64<<10)
		var n int64
		for n < huge {
			m, err := w.Write(chunk)
			n += int64(m)
			if err != nil {
				break
			}
		}
		written <- n
	}))
	t.Cleanup(srv.Close)
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)

	// What the receiver wrote, not how long Send took, shows the answer
	// was not read in full.
	r := webhook.New(sealer, 5*time.Second).Send(t.Context(), d)
	if !r.OK() || r.Status != 200 {
		t.Fatalf("Send = %+v, want success with status 200", r)
	}
	if n := <-written; n >= huge {
		t.Errorf("receiver wrote all %d bytes: the answer was read in full", n)
	}
}

func TestSend_FailsWhenReceiverClosesWithoutAnswer(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.ReadAll(r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(srv.Close)
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)

	r := webhook.New(sealer, time.Second).Send(t.Context(), d)
	if r.OK() || r.Status != 0 {
		t.Fatalf("Send = %+v, want a failure with status 0", r)
	}
	if r.Err != "connection closed without a response" && r.Err != "connection reset" {
		t.Errorf("Err = %q, want the connection's end", r.Err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("receiver got %d requests, want 1 (no retry within an attempt)", n)
	}
}

func TestSend_FailsWhenConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	sealer := newSealer(t)
	d, _ := delivery(sealer, "http://"+addr+"/hooks?token=query-must-not-leak")

	r := webhook.New(sealer, time.Second).Send(t.Context(), d)
	if r.OK() || r.Status != 0 || r.Err != "connection refused" {
		t.Fatalf("Send = %+v, want status 0 and Err %q", r, "connection refused")
	}
}

func TestSend_FailsWithCancelledContext(t *testing.T) {
	srv, hits := counter(t)
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	r := webhook.New(sealer, time.Second).Send(ctx, d)
	if r.OK() || r.Status != 0 || r.Err != "cancelled" {
		t.Fatalf("Send = %+v, want status 0 and Err %q", r, "cancelled")
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("receiver got %d requests, want none", n)
	}
}

func TestSend_FailsWithoutRequestWhenSecretCannotBeOpened(t *testing.T) {
	srv, hits := counter(t)
	sealer := newSealer(t)
	d, _ := delivery(sealer, srv.URL)
	_, raw := webhook.NewSecret()
	other, _ := webhook.NewSealer(make([]byte, webhook.KeySize))
	tampered := append([]byte(nil), d.Secret...)
	tampered[len(tampered)-1] ^= 1

	for name, sealed := range map[string][]byte{
		"other subscription": sealer.Seal("sub_2", raw),
		"other key":          other.Seal("sub_1", raw),
		"tampered":           tampered,
		"empty":              nil,
		"clear":              raw,
	} {
		t.Run(name, func(t *testing.T) {
			d := d
			d.Secret = sealed
			r := webhook.New(sealer, time.Second).Send(t.Context(), d)
			if r.OK() || r.Status != 0 || r.Err != "secret cannot be opened" {
				t.Fatalf("Send = %+v, want Err %q", r, "secret cannot be opened")
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("receiver got %d requests, want none", n)
	}
}

func TestSend_SignsWithTheSubscriptionsCurrentSecret(t *testing.T) {
	srv, got := receiver(t, http.StatusOK)
	sealer := newSealer(t)
	s := webhook.New(sealer, time.Second)
	d, first := delivery(sealer, srv.URL)
	if r := s.Send(t.Context(), d); !r.OK() {
		t.Fatalf("first Send = %+v", r)
	}
	second, raw := webhook.NewSecret()
	d.Secret = sealer.Seal(d.Subscription, raw) // rotated
	if r := s.Send(t.Context(), d); !r.OK() {
		t.Fatalf("second Send = %+v", r)
	}
	if req := <-got; verifyStandardWebhook(first, req.header, req.body, time.Now()) != nil {
		t.Error("first delivery is not signed with the first secret")
	}
	req := <-got
	if err := verifyStandardWebhook(second, req.header, req.body, time.Now()); err != nil {
		t.Errorf("delivery after rotation: %v", err)
	}
	if verifyStandardWebhook(first, req.header, req.body, time.Now()) == nil {
		t.Error("delivery after rotation is still signed with the old secret")
	}
}

func TestSend_RejectsNonHTTPURL(t *testing.T) {
	sealer := newSealer(t)
	for _, u := range []string{"ftp://127.0.0.1/", "file:///etc/passwd", "/relative", "http://user:pw@127.0.0.1/"} {
		d, _ := delivery(sealer, u)
		if r := webhook.New(sealer, time.Second).Send(t.Context(), d); r.OK() || r.Status != 0 || r.Err != "invalid URL" {
			t.Errorf("Send to %q = %+v, want Err %q", u, r, "invalid URL")
		}
	}
}

func TestSend_ConcurrentDeliveriesToSeveralSubscriptions(t *testing.T) {
	srv, got := receiver(t, http.StatusNoContent)
	sealer := newSealer(t)
	s := webhook.New(sealer, 2*time.Second)
	secrets := map[string]string{}
	var ds []event.Delivery
	for i := range 4 {
		sub := "sub_" + strconv.Itoa(i)
		text, raw := webhook.NewSecret()
		secrets[sub] = text
		for j := range 16 {
			ds = append(ds, event.Delivery{ID: int64(i*16 + j), Subscription: sub, URL: srv.URL + "/" + sub,
				Secret: sealer.Seal(sub, raw), EventID: fmt.Sprintf("evt_%d_%d", i, j), Body: []byte(`{}`)})
		}
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() {
			if r := s.Send(t.Context(), d); !r.OK() {
				t.Errorf("Send %s = %+v", d.EventID, r)
			}
		})
	}
	wg.Wait()
	for range ds {
		req := <-got
		sub := strings.Split(req.header.Get("webhook-id"), "_")[1]
		if err := verifyStandardWebhook(secrets["sub_"+sub], req.header, req.body, time.Now()); err != nil {
			t.Errorf("delivery %s: %v", req.header.Get("webhook-id"), err)
		}
	}
}
