package session

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/brain-in-go/brain/envsdk/envapi"
)

// Span attributes every engine span carries: the session and the journal
// sequence of the record that started the work.
const (
	AttrSessionID = "brain.session_id"
	AttrSequence  = "brain.sequence"
)

// noSpan is the span of untraced work; its methods do nothing.
var noSpan = trace.SpanFromContext(context.Background())

// startSpan starts the span name, a child of parent's span, for the work
// of session id started by record seq. Without Config.Tracer it answers
// noSpan and costs nothing.
func (e *Engine) startSpan(parent context.Context, name, id string, seq uint64, attrs ...attribute.KeyValue) trace.Span {
	if e.cfg.Tracer == nil {
		return noSpan
	}
	_, span := e.cfg.Tracer.Start(parent, name, trace.WithAttributes(
		attribute.String(AttrSessionID, id), attribute.Int64(AttrSequence, int64(seq))), trace.WithAttributes(attrs...))
	return span
}

// startToolSpan starts the span of tool call seq (its attributes are
// built only when tracing).
func (e *Engine) startToolSpan(parent context.Context, id string, seq uint64, tool, env string) trace.Span {
	if e.cfg.Tracer == nil {
		return noSpan
	}
	return e.startSpan(parent, "brain.tool_call", id, seq, attribute.String("brain.tool", tool), attribute.String("brain.environment", env))
}

// withSpan answers ctx carrying span, so that the work under it (and the
// requests it sends) continues its trace.
func (e *Engine) withSpan(ctx context.Context, span trace.Span) context.Context {
	if e.cfg.Tracer == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}

// endSpan ends span with its outcome: code is a failure code ("" for
// success).
func endSpan(span trace.Span, code, message string) {
	if span == nil || span == noSpan {
		return
	}
	if code != "" {
		span.SetAttributes(attribute.String("brain.failure_code", code))
		span.SetStatus(codes.Error, code+": "+message)
	} else {
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}

// endSpanErr ends span with err's failure code, or as a success.
func endSpanErr(span trace.Span, err error) {
	if span == nil || span == noSpan {
		return
	}
	if err == nil {
		endSpan(span, "", "")
		return
	}
	code, _ := failureCode(err)
	endSpan(span, code, failureMessage(err))
}

// endToolSpan ends a tool call's span with its outcome.
func endToolSpan(span trace.Span, o envapi.Outcome) {
	if span == nil || span == noSpan {
		return
	}
	span.SetAttributes(attribute.String("brain.outcome", string(o.Status)))
	if o.Status == envapi.StatusOK {
		endSpan(span, "", "")
		return
	}
	code, msg := string(o.Status), o.Message
	if o.Error != nil {
		code, msg = o.Error.Code, o.Error.Message
	}
	endSpan(span, code, msg)
}

// traceActivationLocked starts the spans of activation a (and of its
// turn), children of the span that submitted the turn, and answers ctx
// carrying the activation's span.
func (s *sess) traceActivationLocked(ctx context.Context, a *activation) context.Context {
	parent := trace.ContextWithSpanContext(context.Background(), s.parent)
	s.parent = trace.SpanContext{}
	if s.e.cfg.Tracer == nil {
		return ctx
	}
	trigger := "events"
	if a.turn != 0 {
		a.turnSpan = s.e.startSpan(parent, "brain.turn", s.id, a.turn)
		parent = trace.ContextWithSpan(parent, a.turnSpan)
		trigger = "turn"
	}
	a.span = s.e.startSpan(parent, "brain.activation", s.id, a.seq, attribute.String("brain.trigger", trigger))
	return trace.ContextWithSpan(ctx, a.span)
}

// TraceOperation starts the client span of one environment operation, a
// child of ctx's span, whatever serves it (a provider over HTTP, a host
// connection, a Wasm Tool), and answers ctx carrying it with the function
// that ends it with the receipt. With a nil tracer it does nothing.
func TraceOperation(ctx context.Context, tracer trace.Tracer, op Operation) (context.Context, func(envapi.Receipt, error)) {
	if tracer == nil {
		return ctx, func(envapi.Receipt, error) {}
	}
	ctx, span := tracer.Start(ctx, "environment "+string(op.Request.Type), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String(AttrSessionID, op.SessionID),
			attribute.Int64(AttrSequence, int64(op.Sequence)),
			attribute.String("brain.environment", op.Environment),
			attribute.String("brain.driver", op.Declaration.Driver),
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
