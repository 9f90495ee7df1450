// Package nats is the event.Publisher of NATS JetStream (EVENTS_NATS_URL):
// every event goes to stream CAREBRIDGE_EVENTS on subject
// carebridge.events.<type>, its id as the message id (Nats-Msg-Id), so the
// stream stores an event published twice once (within the stream's
// duplicate window). The body is the event's JSON, as the webhooks get it.
// With WithTracer, each message has a producer span and carries its W3C
// traceparent in its headers (trace.go).
//
// It works with nats-server 2.9 and later: it uses no feature of 2.10
// (subject transforms, metadata, compression, multiple filters).
package nats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"time"

	natsgo "github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core"
	"github.com/carebridge/carebridge/core/event"
)

// The stream of the contract.
const (
	StreamName    = "CAREBRIDGE_EVENTS"
	SubjectPrefix = "carebridge.events."
)

const (
	// connectTimeout bounds connecting to one server at start.
	connectTimeout = 5 * time.Second
	// publishTimeout bounds one Publish: the stream acknowledges every
	// message by then or the batch fails (and is published again later).
	publishTimeout = 10 * time.Second
	// maxAge is how long the stream keeps an event when New creates it:
	// consumers have a week to catch up, and the stream does not grow
	// without bound.
	maxAge = 7 * 24 * time.Hour
	// duplicates is the stream's duplicate window (JetStream's default,
	// set explicitly): an event published again within it is stored once.
	duplicates = 2 * time.Minute
	// drainTimeout bounds Close.
	drainTimeout = 5 * time.Second
)

var _ event.Publisher = (*Publisher)(nil)

// Publisher publishes events to JetStream. It is safe for concurrent use.
type Publisher struct {
	nc     *natsgo.Conn
	js     jetstream.JetStream
	log    *slog.Logger
	closed chan struct{}
	tracer trace.Tracer // nil: no spans, no traceparent
}

// New connects to the NATS server(s) of url (nats://[user:pass@]host:port,
// several separated by commas), reconnecting for ever once connected, and
// makes sure the stream exists: it creates it when missing and leaves the
// configuration of an existing one alone. A server that does not answer
// fails New at once. Errors never contain the URL's credentials.
func New(ctx context.Context, url string, log *slog.Logger, opts ...Option) (*Publisher, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "nats")
	shown, secrets := redact(url)
	timeout := connectTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, max(time.Until(dl), time.Millisecond))
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", shown, err)
	}
	closed := make(chan struct{})
	nc, err := natsgo.Connect(url,
		natsgo.Name("carebridge"),
		natsgo.Timeout(timeout),
		natsgo.RetryOnFailedConnect(false),
		natsgo.MaxReconnects(-1),
		natsgo.DrainTimeout(drainTimeout),
		natsgo.DisconnectErrHandler(func(_ *natsgo.Conn, err error) {
			if err != nil {
				log.Warn("disconnected from NATS", "error", hide(err, secrets))
			}
		}),
		natsgo.ReconnectHandler(func(c *natsgo.Conn) {
			log.Info("reconnected to NATS", "server", redactOne(c.ConnectedUrlRedacted()))
		}),
		natsgo.ErrorHandler(func(_ *natsgo.Conn, _ *natsgo.Subscription, err error) {
			log.Error("NATS error", "error", hide(err, secrets))
		}),
		natsgo.ClosedHandler(func(*natsgo.Conn) { close(closed) }),
	)
	if err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", shown, hide(err, secrets))
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(publishTimeout))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("nats: jetstream: %w", err)
	}
	p := &Publisher{nc: nc, js: js, log: log, closed: closed}
	for _, o := range opts {
		o(p)
	}
	if err := p.ensureStream(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return p, nil
}

// StreamConfig is the configuration New gives the stream it creates.
func StreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Carebridge events (see docs/CONTRACT.md)",
		Subjects:    []string{SubjectPrefix + ">"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Discard:     jetstream.DiscardOld,
		MaxAge:      maxAge,
		Duplicates:  duplicates,
	}
}

// ensureStream creates the stream when it is missing. It looks first and
// creates second rather than CreateOrUpdateStream: an existing stream's
// configuration is the operator's.
func (p *Publisher) ensureStream(ctx context.Context) error {
	s, err := p.js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = p.js.CreateStream(ctx, StreamConfig())
		switch {
		case err == nil:
			p.log.Info("created stream", "stream", StreamName, "max_age", maxAge)
			return nil
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			return nil // another instance created it meanwhile
		default:
			return fmt.Errorf("nats: create stream %s: %w", StreamName, err)
		}
	}
	if err != nil {
		return fmt.Errorf("nats: look up stream %s: %w", StreamName, err)
	}
	if subj := s.CachedInfo().Config.Subjects; !slices.Contains(subj, SubjectPrefix+">") {
		p.log.Warn("existing stream may not take every event subject", "stream", StreamName,
			"subjects", subj, "want", SubjectPrefix+">")
	}
	return nil
}

// Subject returns the subject of events of type t.
func Subject(t core.EventType) string { return SubjectPrefix + string(t) }

// Publish publishes msgs and returns once the stream acknowledged every
// one (a duplicate, already stored, counts), or fails with the first
// failure when any was not acknowledged within ctx and 10 s.
func (p *Publisher) Publish(ctx context.Context, msgs []event.Message) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("nats: publish: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	futures := make([]jetstream.PubAckFuture, 0, len(msgs))
	spans := p.spans(ctx, len(msgs))
	defer spans.end()
	for _, m := range msgs {
		if err := check(m); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("nats: publish event %s: %w", m.ID, err)
		}
		msg := natsgo.NewMsg(Subject(m.Type))
		msg.Data = m.Body
		msg.Header.Set("Content-Type", "application/json")
		spans.start(m, msg)
		f, err := p.js.PublishMsgAsync(msg, jetstream.WithMsgID(m.ID))
		if err != nil {
			return fmt.Errorf("nats: publish event %s: %w", m.ID, err)
		}
		futures = append(futures, f)
	}
	var first error
	failed := 0
	for i, f := range futures {
		select {
		case <-f.Ok():
			spans.ok(i)
		case err := <-f.Err():
			spans.fail(i)
			failed++
			if first == nil {
				first = fmt.Errorf("event %s: %w", msgs[i].ID, err)
			}
		case <-ctx.Done():
			return fmt.Errorf("nats: publish: waiting for acknowledgement %d of %d: %w", i+1, len(futures), ctx.Err())
		}
	}
	if first != nil {
		return fmt.Errorf("nats: publish: %d of %d events failed; first, %w", failed, len(futures), first)
	}
	return nil
}

// check refuses a message that cannot go out as the contract says: without
// an id the stream cannot tell it was published before, and a type must
// make a valid subject.
func check(m event.Message) error {
	if m.ID == "" {
		return fmt.Errorf("nats: publish event %d: no id", m.Seq)
	}
	t := string(m.Type)
	if t == "" || strings.ContainsAny(t, " \t\r\n*>") || strings.HasPrefix(t, ".") ||
		strings.HasSuffix(t, ".") || strings.Contains(t, "..") {
		return fmt.Errorf("nats: publish event %s: type %q is not a subject", m.ID, t)
	}
	return nil
}

// Close drains the connection (acknowledgements on their way still
// arrive) and closes it, within 5 s.
func (p *Publisher) Close() {
	if err := p.nc.Drain(); err != nil {
		p.nc.Close()
	}
	select {
	case <-p.closed:
	case <-time.After(drainTimeout + time.Second):
		p.nc.Close()
	}
}

// redact returns url as it may be shown (every server without its
// credentials) and the secrets, which must not be shown: passwords, and
// a user without a password, which NATS reads as a token.
func redact(raw string) (string, []string) {
	var shown, secrets []string
	for s := range strings.SplitSeq(raw, ",") {
		s = strings.TrimSpace(s)
		if u, err := url.Parse(s); err == nil && u.User != nil {
			if pass, ok := u.User.Password(); ok {
				if pass != "" {
					secrets = append(secrets, pass)
				}
			} else if token := u.User.Username(); token != "" {
				secrets = append(secrets, token)
			}
		} else if at := strings.LastIndex(s, "@"); at >= 0 {
			// Unparsable: still hide what looks like credentials.
			if i := strings.Index(s, "://"); i >= 0 && i+3 < at {
				secrets = append(secrets, s[i+3:at])
			}
		}
		shown = append(shown, redactOne(s))
	}
	return strings.Join(shown, ","), secrets
}

// redactOne returns a server's URL without its credentials.
func redactOne(s string) string {
	if at := strings.LastIndex(s, "@"); at >= 0 {
		if i := strings.Index(s, "://"); i >= 0 && i+3 <= at {
			return s[:i+3] + "***@" + s[at+1:]
		}
		return "***@" + s[at+1:]
	}
	return s
}

// hide returns err, or, when its text shows a secret, an error of the same
// text with every secret masked (which no longer wraps err).
func hide(err error, secrets []string) error {
	msg := err.Error()
	masked := msg
	for _, s := range secrets {
		masked = strings.ReplaceAll(masked, s, "***")
	}
	if masked == msg {
		return err
	}
	return errors.New(masked)
}
