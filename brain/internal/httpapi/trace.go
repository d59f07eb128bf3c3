package httpapi

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/internal/session"
)

// traceRequest starts the server span of r, continuing the W3C trace
// context the request carries (traceparent, tracestate), and answers the
// request carrying the span with the function that ends it once the
// request is served: named by the route pattern it matched, with its
// status and session id, failed when the status is 5xx or the response
// was aborted (cut off) part way. Headers other than the trace context
// are never read into the span.
//
// The method is recorded as OpenTelemetry's HTTP conventions say: one of
// the methods HTTP defines (knownMethod), else "_OTHER" with the method
// the client sent, cut to maxMethodOriginal bytes, in
// http.request.method_original. A request no route takes (the catch-all
// that answers 404 or 405, a request for "*") is named by its method, or
// "HTTP" for another method, and carries no http.route: a client chooses
// neither the names of spans nor their size.
func (s *Server) traceRequest(r *http.Request, sw *statusWriter) (*http.Request, func(aborted bool)) {
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method, known := knownMethod(r.Method)
	name := method
	attrs := []attribute.KeyValue{attribute.String("http.request.method", method)}
	if !known {
		name = "HTTP"
		attrs = append(attrs, attribute.String("http.request.method_original", methodOriginal(r.Method)))
	}
	ctx, span := s.opts.Tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	r = r.WithContext(ctx)
	return r, func(aborted bool) {
		if r.Pattern != "" && r.Pattern != patternNotRouted {
			span.SetName(r.Pattern)
			span.SetAttributes(attribute.String("http.route", r.Pattern))
		}
		if id := sessionOf(r); id != "" {
			span.SetAttributes(attribute.String(session.AttrSessionID, id))
		}
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		switch {
		case aborted:
			span.SetStatus(codes.Error, "response aborted")
		case status >= 500:
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
	}
}

// sessionOf answers the session id a request's route names: the {id} of
// a route under /v1/sessions/{id} ("" for others, whose {id} names an
// agentloop or a Tool).
func sessionOf(r *http.Request) string {
	_, path, _ := strings.Cut(r.Pattern, " ")
	if !strings.HasPrefix(path, "/v1/sessions/{id}") {
		return ""
	}
	return r.PathValue("id")
}
