package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/core/event"
)

// The OTLP protocols the service exports traces with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Tracing says where the service's spans go. The zero value makes none:
// no span is started anywhere and no traceparent is sent.
type Tracing struct {
	// Protocol, when set, exports the spans over OTLP with it
	// (ProtocolHTTP or ProtocolGRPC); the SDK reads the endpoint, headers,
	// time-outs, sampler and batching from the OTEL_* variables itself.
	Protocol string
	// Provider, when set, takes the spans instead of an exporter (tests
	// give the SDK's in-memory recorder). App does not shut it down.
	Provider trace.TracerProvider
}

// TracingFromEnv reads whether traces are exported from the standard
// OTEL_* variables (getenv is os.Getenv in production):
//
//   - OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER=none: off;
//   - OTEL_TRACES_EXPORTER=otlp: on (the SDK's default endpoint when none
//     is set: localhost:4318 over HTTP, localhost:4317 over gRPC);
//   - OTEL_TRACES_EXPORTER unset: on when OTEL_EXPORTER_OTLP_ENDPOINT or
//     OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, else off;
//   - OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, else OTEL_EXPORTER_OTLP_PROTOCOL:
//     http/protobuf (default) or grpc.
//
// Any other exporter or protocol, or an endpoint that is not an http(s)
// URL, is an error naming the variable.
func TracingFromEnv(getenv func(string) string) (Tracing, error) {
	get := func(name string) string { return strings.TrimSpace(getenv(name)) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return Tracing{}, nil
	}
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name, fmt.Sprintf(format, args...)))
	}
	endpoints := false
	for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
		v := get(name)
		if v == "" {
			continue
		}
		endpoints = true
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad(name, "must be an http:// or https:// URL")
		}
	}
	on := endpoints
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "":
	case "none":
		return Tracing{}, nil
	case "otlp":
		on = true
	default:
		bad("OTEL_TRACES_EXPORTER", "must be otlp or none, got %q", exp)
	}
	protocol := get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if protocol == "" {
		protocol, name = get("OTEL_EXPORTER_OTLP_PROTOCOL"), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	switch protocol {
	case "":
		protocol = ProtocolHTTP
	case ProtocolHTTP, ProtocolGRPC:
	default:
		bad(name, "must be http/protobuf or grpc, got %q", protocol)
	}
	if err := errors.Join(errs...); err != nil || !on {
		return Tracing{}, err
	}
	return Tracing{Protocol: protocol}, nil
}

// tracing is the tracer provider New made (or was given).
type tracing struct {
	provider trace.TracerProvider     // nil: no spans
	sdk      *sdktrace.TracerProvider // what close flushes; nil when none or the caller's
}

// newTracing makes the provider cfg asks for: the caller's, an OTLP
// exporter's (batched; service.name "carebridge" unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES say otherwise), or none. The exporter does
// not connect before it has spans to send; its failures are logged at
// WARN.
func newTracing(ctx context.Context, cfg Tracing, log *slog.Logger) (*tracing, error) {
	if cfg.Provider != nil {
		return &tracing{provider: cfg.Provider}, nil
	}
	if cfg.Protocol == "" {
		return &tracing{}, nil
	}
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch cfg.Protocol {
	case ProtocolGRPC:
		exp, err = otlptracegrpc.New(ctx)
	case ProtocolHTTP:
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported", cfg.Protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "carebridge")),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		log.Warn("trace resource", "error", err.Error()) // a partial resource is still usable
	}
	// The SDK reports export failures to one handler per process.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		log.Warn("trace export failed", "error", err.Error())
	}))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	log.Info("exporting traces", "protocol", cfg.Protocol)
	return &tracing{provider: tp, sdk: tp}, nil
}

// buildTracing makes the tracer provider of cfg.Tracing and puts it in
// cfg.Tracing.Provider for the parts built after it (nil: no spans).
func (a *App) buildTracing(ctx context.Context, cfg *Config) error {
	t, err := newTracing(ctx, cfg.Tracing, a.log.With("component", "tracing"))
	if err != nil {
		return err
	}
	a.tracing = t
	cfg.Tracing.Provider = t.provider
	return nil
}

// close flushes the spans not yet exported and stops the exporter, within
// 5 s.
func (t *tracing) close(log *slog.Logger) {
	if t == nil || t.sdk == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := t.sdk.Shutdown(ctx); err != nil {
		log.Warn("flush traces", "error", err.Error())
	}
}

// tracedSender makes one client span per webhook delivery attempt, a root
// span (the outbox does not keep the trace of the change that wrote the
// event): its event id, subscription, attempt, status and outcome; never the receiver's URL, and no traceparent is sent to it.
type tracedSender struct {
	event.Sender
	tracer trace.Tracer
}

func (s tracedSender) Send(ctx context.Context, d event.Delivery) event.Result {
	ctx, span := s.tracer.Start(ctx, "webhook deliver", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("event.id", d.EventID),
			attribute.String("webhook.subscription", d.Subscription),
			attribute.Int("webhook.attempt", d.Attempt)))
	r := s.Sender.Send(ctx, d)
	if r.Status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", r.Status))
	}
	outcome := "delivered"
	if !r.OK() {
		outcome = "failed"
		span.SetStatus(codes.Error, outcome)
	}
	span.SetAttributes(attribute.String("webhook.outcome", outcome))
	span.End()
	return r
}

// tracerOf is tp's tracer for the service's own spans; nil when tp is.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer("github.com/carebridge/carebridge")
}
