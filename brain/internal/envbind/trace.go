package envbind

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// traceContext is the W3C trace context propagator (traceparent,
// tracestate).
var traceContext = propagation.TraceContext{}

// traceOperation starts the client span of one operation's POST (see
// session.TraceOperation). Without Config.Tracer it does nothing.
func (b *Binder) traceOperation(ctx context.Context, op session.Operation) (context.Context, func(envapi.Receipt, error)) {
	return session.TraceOperation(ctx, b.cfg.Tracer, op)
}

// injectTrace adds the W3C trace context of ctx's span to an outbound
// request's headers, when tracing is on.
func (b *Binder) injectTrace(ctx context.Context, h http.Header) {
	if b.cfg.Tracer != nil {
		traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	}
}

// traceStatus records on the operation's span (that of ctx) the HTTP
// status the provider answered, when tracing is on.
func (b *Binder) traceStatus(ctx context.Context, status int) {
	if b.cfg.Tracer != nil {
		trace.SpanFromContext(ctx).SetAttributes(attribute.Int("http.response.status_code", status))
	}
}
