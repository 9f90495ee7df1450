package httpapi

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the API's spans.
const tracerName = "github.com/carebridge/carebridge/adapters/httpapi"

// traceContext reads the caller's W3C traceparent (and tracestate), so a
// request joins the caller's trace; baggage is not read.
var traceContext = propagation.TraceContext{}

// startSpan starts the server span of r, a child of the caller's span when
// r carries a traceparent. Without a tracer it returns r's context and a
// nil span. The span is named when the route is known (endSpan).
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	if s.tracer == nil {
		return r.Context(), nil
	}
	ctx := traceContext.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := spanMethod(r.Method)
	return s.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", method)))
}

// spanMethod is method when it is a standard one, else "_OTHER" (as the
// HTTP conventions ask): a client must not make up span names.
func spanMethod(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// endSpan names span by the method and the route's template ("GET
// /cloud-blob/download/{id}"; the method alone when no route matched),
// records the route, the status and the request id, and ends it. Never
// the URL, its query, a header or a body: they can hold patient data.
// A 5xx answer is an error.
func endSpan(span trace.Span, info *requestInfo, method string, status int) {
	if span == nil {
		return
	}
	method = spanMethod(method)
	if info.route != "unmatched" {
		span.SetName(method + " " + info.route)
		span.SetAttributes(attribute.String("http.route", info.route))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status),
		attribute.String("carebridge.request_id", info.id))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
