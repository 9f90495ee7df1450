package ehrhttp

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/carebridge/carebridge/adapters/ehr/ehrclient"
)

// The HTTP attributes of an EHR call's span, beside ehrclient's.
const (
	attrMethod   = attribute.Key("http.request.method")
	attrTemplate = attribute.Key("url.template")
	attrStatus   = attribute.Key("http.response.status_code")
)

// traceContext is the only propagator an EHR call uses: the W3C
// traceparent (and tracestate), never baggage.
var traceContext = propagation.TraceContext{}

// withTrace makes one client span per call (see ehrclient.StartSpan),
// named by the method and the URL's path template, never the URL itself:
// a search URL's query holds names and birth dates. With propagate, each
// attempt carries the span's traceparent to the EHR (the system's
// propagate_trace); without, nothing of the trace leaves the service.
// It sits below observe, whose call record tells the attempts and the
// last status.
func withTrace(tracer trace.Tracer, system string, base *url.URL, propagate bool, cb *ehrclient.Breaker) middleware {
	return func(next doer) doer {
		return func(ctx context.Context, req *http.Request) (*http.Response, error) {
			if req == nil || req.URL == nil {
				return next(ctx, req)
			}
			method := cmp.Or(req.Method, http.MethodGet)
			template := pathTemplate(base, req.URL)
			sctx, span := ehrclient.StartSpan(ctx, tracer, system, method+" "+template)
			if propagate && span.SpanContext().IsValid() {
				r := req.WithContext(sctx) // a shallow copy: req is not modified
				r.Header = req.Header.Clone()
				if r.Header == nil {
					r.Header = http.Header{}
				}
				traceContext.Inject(sctx, propagation.HeaderCarrier(r.Header))
				req = r
			}
			resp, err := next(sctx, req)
			rec := callOf(ctx)
			o := outcome(ctx, resp, err)
			extra := []attribute.KeyValue{attrMethod.String(method), attrTemplate.String(template)}
			if rec.status != 0 {
				extra = append(extra, attrStatus.Int(rec.status))
			}
			failed := o != OutcomeSuccess && o != OutcomeClientError && o != OutcomeCanceled
			ehrclient.EndSpan(span, max(rec.attempts, 1), o, cb, failed, extra...)
			return resp, err
		}
	}
}

var (
	// resourceType is a FHIR resource type's name ("Patient").
	resourceType = regexp.MustCompile(`^[A-Z][A-Za-z]{0,63}$`)
	// operationName is a FHIR interaction or operation ("_history",
	// "_search", "$everything").
	operationName = regexp.MustCompile(`^[_$][A-Za-z][A-Za-z-]{0,63}$`)
)

// pathTemplate is u's path below base's, with every segment that may be an
// id replaced by "{id}" ("/Appointment/{id}", "/Patient/{id}/_history/{id}"):
// a segment stays only where FHIR puts a resource type (even positions:
// type, id, type, id …) and looks like one, or when it names an
// interaction or operation. A path outside base's keeps all its segments,
// by the same rule. There is never a query.
func pathTemplate(base, u *url.URL) string {
	p := u.EscapedPath()
	if bp := strings.TrimSuffix(base.EscapedPath(), "/"); bp != "" {
		if rest, ok := strings.CutPrefix(p, bp); ok && (rest == "" || rest[0] == '/') {
			p = rest
		}
	}
	var b strings.Builder
	i := 0
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" {
			continue
		}
		b.WriteByte('/')
		switch {
		case operationName.MatchString(seg), i%2 == 0 && resourceType.MatchString(seg):
			b.WriteString(seg)
		default:
			b.WriteString("{id}")
		}
		i++
	}
	if b.Len() == 0 {
		return "/"
	}
	return b.String()
}
