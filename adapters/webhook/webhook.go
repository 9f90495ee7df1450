// Package webhook delivers events to webhook receivers over HTTP, signed
// as Standard Webhooks asks (https://www.standardwebhooks.com): headers
// webhook-id, webhook-timestamp and webhook-signature, the last one
// "v1," followed by the base64 HMAC-SHA256 of "id.timestamp.body" under
// the subscription's secret. It implements event.Sender, and keeps the
// subscriptions' secrets sealed at rest (Sealer).
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/carebridge/carebridge/core/event"
)

const (
	// UserAgent is sent with every delivery.
	UserAgent = "Carebridge-Webhooks/1"
	// maxDrain is how much of a receiver's answer is read (and discarded)
	// before the connection is closed.
	maxDrain = 64 << 10
	// maxIdlePerHost keeps enough connections to one receiver for the
	// deliveries a subscription has in flight at once.
	maxIdlePerHost = 64
)

// Sender posts deliveries to their receivers; it implements event.Sender.
// It is safe for concurrent use.
type Sender struct {
	sealer  *Sealer
	client  *http.Client
	guarded *http.Client // for Delivery.Guarded: every address checked (guard.go)
	timeout time.Duration

	mu      sync.Mutex
	secrets map[string]opened // by subscription id
}

// opened is a subscription's secret as stored, and opened.
type opened struct{ sealed, raw []byte }

// New returns a sender that opens secrets with sealer and gives each
// attempt timeout (event.DefaultTimeout when not positive). It never
// follows redirects and uses no proxy: the operator's receivers are
// reached directly.
//
// The deliveries of a practice's subscriptions (Delivery.Guarded) go
// through a client of their own whose every connection is checked
// (Guard): an address event.Forbidden refuses is never connected to,
// whatever a name resolved to at creation.
func New(sealer *Sealer, timeout time.Duration, opts ...Option) *Sender {
	if timeout <= 0 {
		timeout = event.DefaultTimeout
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	client := func(tr *http.Transport) *http.Client {
		tr.Proxy = nil
		tr.MaxIdleConns = 4 * maxIdlePerHost
		tr.MaxIdleConnsPerHost = maxIdlePerHost
		return &http.Client{
			Transport: tr,
			Timeout:   timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	guarded := http.DefaultTransport.(*http.Transport).Clone()
	guarded.DialContext = Guard{Resolver: o.resolver}.DialContext
	open := http.DefaultTransport.(*http.Transport).Clone()
	s := &Sender{sealer: sealer, timeout: timeout, secrets: map[string]opened{}, client: client(open), guarded: client(guarded)}
	if o.allowPrivate {
		s.guarded = s.client
	}
	return s
}

type options struct {
	allowPrivate bool
	resolver     event.Resolver
}

// Option tunes a Sender.
type Option func(*options)

// AllowPrivate (WEBHOOK_ALLOW_PRIVATE) lets a practice's deliveries reach
// any address, as the operator's do.
func AllowPrivate(allow bool) Option { return func(o *options) { o.allowPrivate = allow } }

// WithResolver makes the guarded connections resolve names with r (tests
// inject one; nil: net.DefaultResolver).
func WithResolver(r event.Resolver) Option { return func(o *options) { o.resolver = r } }

// Sign returns the webhook-signature header value of a delivery of body
// as event id at Unix time ts under secret (the decoded bytes after
// "whsec_"): "v1," followed by the standard, padded base64 of
// HMAC-SHA256(secret, id + "." + ts + "." + body).
func Sign(secret []byte, id string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write(strconv.AppendInt(nil, ts, 10))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// Send makes one attempt to deliver d: a POST of d.Body, signed, to d.URL.
// Only a 2xx answer is a success. The Result's Err is a short reason that
// never contains the receiver's answer, nor the URL.
func (s *Sender) Send(ctx context.Context, d event.Delivery) event.Result {
	if err := ValidURL(d.URL); err != nil {
		return event.Result{Err: "invalid URL"}
	}
	secret, err := s.secret(d.Subscription, d.Secret)
	if err != nil {
		return event.Result{Err: "secret cannot be opened"}
	}
	var previous []byte
	if d.PreviousSecret != nil {
		if previous, err = s.secret(d.Subscription+previousKey, d.PreviousSecret); err != nil {
			return event.Result{Err: "secret cannot be opened"}
		}
	}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL, bytes.NewReader(d.Body))
	if err != nil {
		return event.Result{Err: "invalid URL"}
	}
	ts := start.Unix()
	req.Header["webhook-id"] = []string{d.EventID}
	req.Header["webhook-timestamp"] = []string{strconv.FormatInt(ts, 10)}
	sig := Sign(secret, d.EventID, ts, d.Body)
	if previous != nil { // a rotation's overlap: both, space-separated
		sig += " " + Sign(previous, d.EventID, ts, d.Body)
	}
	req.Header["webhook-signature"] = []string{sig}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", UserAgent)

	client := s.client
	if d.Guarded {
		client = s.guarded
	}
	resp, err := client.Do(req)
	if err != nil {
		return event.Result{Err: s.reason(ctx, start, err)}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxDrain))
	_ = resp.Body.Close()

	r := event.Result{Status: resp.StatusCode}
	switch c := resp.StatusCode; {
	case c >= 200 && c < 300:
	case c >= 300 && c < 400:
		r.Err = fmt.Sprintf("redirect not followed (status %d)", c)
	default:
		r.Err = fmt.Sprintf("status %d", c)
	}
	return r
}

// previousKey marks, in the cache of opened secrets, a subscription's
// previous secret.
const previousKey = "/previous"

// secret returns the opened secret of subscription sub (with previousKey:
// its previous one), stored as sealed; it opens each one once, and again
// when it changes.
func (s *Sender) secret(key string, sealed []byte) ([]byte, error) {
	sub := strings.TrimSuffix(key, previousKey)
	s.mu.Lock()
	o, ok := s.secrets[key]
	s.mu.Unlock()
	if ok && bytes.Equal(o.sealed, sealed) {
		return o.raw, nil
	}
	if s.sealer == nil {
		return nil, errCannotOpen
	}
	raw, err := s.sealer.Open(sub, sealed)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.secrets[key] = opened{sealed: bytes.Clone(sealed), raw: raw}
	s.mu.Unlock()
	return raw, nil
}

// reason classifies the failure of a request in a few words. It never
// uses err's text, which holds the URL and its query.
func (s *Sender) reason(ctx context.Context, start time.Time, err error) string {
	var (
		ne   net.Error
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		hn   x509.HostnameError
		ua   x509.UnknownAuthorityError
		ci   x509.CertificateInvalidError
		rh   tls.RecordHeaderError
	)
	var refused *refusedError
	switch {
	case errors.As(err, &refused):
		return refused.Error()
	case errors.Is(ctx.Err(), context.DeadlineExceeded),
		errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "timed out after " + s.budget(ctx, start).String()
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without a response"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "host not found"
		}
		return "host lookup failed"
	case errors.As(err, &cert), errors.As(err, &hn), errors.As(err, &ua), errors.As(err, &ci):
		return "TLS certificate not accepted"
	case errors.As(err, &rh):
		return "TLS handshake failed"
	default:
		return "request failed"
	}
}

// budget is the time an attempt that began at start was given: the
// sender's time-out, or less when ctx ends earlier.
func (s *Sender) budget(ctx context.Context, start time.Time) time.Duration {
	b := s.timeout
	if dl, ok := ctx.Deadline(); ok && dl.Sub(start) < b {
		b = max(dl.Sub(start), 0)
	}
	return b.Round(time.Millisecond)
}
