package app

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/carebridge/carebridge/adapters/nats"
	"github.com/carebridge/carebridge/adapters/postgres"
	"github.com/carebridge/carebridge/adapters/webhook"
	"github.com/carebridge/carebridge/core/event"
)

// events delivers the outbox: the webhook dispatcher, the NATS relay
// (with EVENTS_NATS_URL), the wake-ups on commit, and the purge.
type events struct {
	db         *postgres.Store
	log        *slog.Logger
	dispatcher *event.Dispatcher
	queue      *postgres.Webhooks // the dispatcher's and relay's own pool
	relay      *event.Relay       // nil without NATS
	nats       *nats.Publisher    // nil without NATS
	purged     prometheus.Counter
	// manager is the webhooks practices manage (/api/v1/webhooks).
	manager *event.Manager
}

// How often each instance purges delivered events past their retention.
const eventPurgeEvery = time.Hour

// newEvents builds the outbox's delivery on db: the metrics, the webhook
// dispatcher on its own queue, the manager of subscriptions and, with
// EVENTS_NATS_URL, the NATS relay.
func newEvents(ctx context.Context, cfg Config, keys Keys, db *postgres.Store, log *slog.Logger, reg *prometheus.Registry) (*events, error) {
	e := &events{db: db, log: log}
	sealer, err := keys.WebhookSealer()
	if err != nil {
		return nil, err
	}
	m := newEventMetrics(reg)
	e.purged = m.purged

	dcfg := cfg.Events
	dcfg.OnSettle = m.settled(log)
	dcfg.OnError = func(op string, err error) { log.Warn(op, "error", err.Error()) }
	queue, err := db.DeliveryQueue()
	if err != nil {
		return nil, err
	}
	e.queue = queue
	queue.OnDisabled = m.subscriptionsDisabled(log)
	resolver := webhookResolver(cfg)
	e.manager = event.NewManager(db.Webhooks(), webhook.Secrets{Sealer: sealer}, db.Members(),
		event.URLPolicy{AllowPrivate: cfg.WebhookAllowPrivate, Resolver: resolver})
	e.dispatcher = event.NewDispatcher(queue, webhookSender(cfg, sealer, dcfg.Timeout, resolver), dcfg)

	if cfg.EventsNATSURL != "" {
		if err := e.connectRelay(ctx, cfg, dcfg, m.published); err != nil {
			queue.Close()
			return nil, err
		}
	}
	return e, nil
}

// eventMetrics are what webhook delivery, the relay and the purge count.
type eventMetrics struct {
	deliveries                  *prometheus.CounterVec
	lag                         prometheus.Histogram
	published, purged, disabled prometheus.Counter
}

// newEventMetrics registers the metrics of the outbox's delivery on reg.
func newEventMetrics(reg *prometheus.Registry) eventMetrics {
	m := eventMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "carebridge_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome: delivered, retry (failed, to be retried) or failed (given up)."}, []string{"outcome"}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "carebridge_webhook_delivery_seconds",
			Help:    "From an event's commit to its receiver's 2xx.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 300, 3600, 86400}}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_events_published_total",
			Help: "Events published to NATS JetStream."}),
		purged: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_events_purged_total",
			Help: "Events removed from the outbox after their retention."}),
		disabled: prometheus.NewCounter(prometheus.CounterOpts{Name: "carebridge_webhook_subscriptions_disabled_total",
			Help: "Webhook subscriptions disabled because every delivery failed for 24 hours."}),
	}
	reg.MustRegister(m.deliveries, m.lag, m.published, m.purged, m.disabled)
	return m
}

// settled is the dispatcher's OnSettle: it counts each attempt by its
// outcome, times the delivered ones and logs the failed ones.
func (m eventMetrics) settled(log *slog.Logger) func(event.Delivery, event.Outcome) {
	return func(d event.Delivery, o event.Outcome) {
		switch o.State {
		case event.Delivered:
			m.deliveries.WithLabelValues("delivered").Inc()
			m.lag.Observe(time.Since(d.OccurredAt).Seconds())
		case event.Pending:
			m.deliveries.WithLabelValues("retry").Inc()
			log.Debug("webhook attempt failed", "subscription", d.Subscription, "event", d.EventID,
				"attempt", d.Attempt, "status", o.Result.Status, "error", o.Result.Err, "next_at", o.NextAt)
		case event.Failed:
			m.deliveries.WithLabelValues("failed").Inc()
			log.Warn("webhook delivery failed for good", "subscription", d.Subscription, "event", d.EventID,
				"attempts", d.Attempt, "status", o.Result.Status, "error", o.Result.Err)
		}
	}
}

// subscriptionsDisabled is the queue's OnDisabled: it counts and logs the
// subscriptions it disabled.
func (m eventMetrics) subscriptionsDisabled(log *slog.Logger) func(ids []string) {
	return func(ids []string) {
		m.disabled.Add(float64(len(ids)))
		log.Warn("webhook subscriptions disabled: every delivery failed for 24 hours", "subscriptions", ids)
	}
}

// webhookResolver is the resolver that checks webhook hosts: the system's,
// unless cfg sets one (tests do).
func webhookResolver(cfg Config) event.Resolver {
	if cfg.WebhookResolver != nil {
		return cfg.WebhookResolver
	}
	return net.DefaultResolver
}

// webhookSender signs and posts webhooks, within timeout, to the hosts
// resolver finds; traced when tracing is on.
func webhookSender(cfg Config, sealer *webhook.Sealer, timeout time.Duration, resolver event.Resolver) event.Sender {
	var sender event.Sender = webhook.New(sealer, timeout,
		webhook.AllowPrivate(cfg.WebhookAllowPrivate), webhook.WithResolver(resolver))
	if t := tracerOf(cfg.Tracing.Provider); t != nil {
		sender = tracedSender{Sender: sender, tracer: t}
	}
	return sender
}

// connectRelay connects to NATS at EVENTS_NATS_URL and builds the relay
// that publishes the outbox there, counting what it published.
func (e *events) connectRelay(ctx context.Context, cfg Config, dcfg event.Config, published prometheus.Counter) error {
	p, err := nats.New(ctx, cfg.EventsNATSURL, e.log.With("component", "nats"), nats.WithTracer(cfg.Tracing.Provider))
	if err != nil {
		return fmt.Errorf("EVENTS_NATS_URL: %w", err)
	}
	e.nats = p
	e.relay = event.NewRelay(e.queue, p, dcfg.Poll, dcfg.OnError)
	e.relay.OnPublished = func(n int) { published.Add(float64(n)) }
	return nil
}

// loops are the parts that deliver, each until its ctx is done: the
// wake-ups on commit, the dispatcher, the relay (with NATS) and the purge.
// App.Run runs them; the dispatcher records what finished before it
// returns.
func (e *events) loops() []func(context.Context) {
	wake := func() {
		e.dispatcher.Wake()
		if e.relay != nil {
			e.relay.Wake()
		}
	}
	loops := []func(context.Context){
		func(ctx context.Context) {
			e.db.Listen(ctx, wake, func(err error) { e.log.Warn("listen for events", "error", err.Error()) })
		},
		e.dispatcher.Run,
		e.purge,
	}
	if e.relay != nil {
		loops = append(loops, e.relay.Run)
	}
	return loops
}

// close closes the NATS connection and the delivery queue's pool.
func (e *events) close() {
	if e.nats != nil {
		e.nats.Close()
	}
	if e.queue != nil {
		e.queue.Close()
	}
}

// purge removes, every eventPurgeEvery, the events past their retention
// that no delivery waits for, with their deliveries.
func (e *events) purge(ctx context.Context) {
	purgeLoop(ctx, eventPurgeEvery, "purge events", e.db.Webhooks().PurgeEvents, e.log, e.purged)
}
