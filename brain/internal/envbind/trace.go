package envbind

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/brain/internal/session"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// traceContext is the W3C trace context propagator (traceparent,
// tracestate).
var traceContext = propagation.TraceContext{}

// traceOperation starts the client span of one operation's POST, a child
// of ctx's span, and answers ctx carrying it with the function that ends
// it. Without Config.Tracer it does nothing.
func (b *Binder) traceOperation(ctx context.Context, op session.Operation) (context.Context, func(envapi.Receipt, error)) {
	if b.cfg.Tracer == nil {
		return ctx, func(envapi.Receipt, error) {}
	}
	ctx, span := b.cfg.Tracer.Start(ctx, "environment "+string(op.Request.Type), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String(session.AttrSessionID, op.SessionID),
			attribute.Int64(session.AttrSequence, int64(op.Sequence)),
			attribute.String("brain.environment", op.Environment),
			attribute.String("brain.request", string(op.Request.Type)),
		))
	return ctx, func(r envapi.Receipt, err error) {
		switch {
		case err != nil:
			span.SetStatus(codes.Error, err.Error())
		case r.Type == envapi.ReceiptFailure:
			span.SetAttributes(attribute.String("brain.receipt", string(r.Type)), attribute.String("brain.failure_code", r.Code))
			span.SetStatus(codes.Error, r.Code)
		default:
			span.SetAttributes(attribute.String("brain.receipt", string(r.Type)))
			span.SetStatus(codes.Ok, "")
		}
		span.End()
	}
}

// injectTrace adds the W3C trace context of ctx's span to an outbound
// request's headers, when tracing is on.
func (b *Binder) injectTrace(ctx context.Context, h http.Header) {
	if b.cfg.Tracer != nil {
		traceContext.Inject(ctx, propagation.HeaderCarrier(h))
	}
}
