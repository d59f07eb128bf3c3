package tracing

import (
	"context"
	"fmt"
	"sync/atomic"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// NotExportedError is what a Shutdown answers when it could not export
// all it held: Count spans (Signal "traces") or log records (Signal
// "logs") were not exported by the time it returned, because its context
// ended first or the receiver did not take them. Err is the reason when
// one is known (nil when every export failed on its own, as said in the
// export failures' log).
type NotExportedError struct {
	Signal string
	Count  int64
	Err    error
}

func (e *NotExportedError) Error() string {
	unit := "spans"
	if e.Signal == "logs" {
		unit = "log records"
	}
	msg := fmt.Sprintf("tracing: %d %s not exported at shutdown", e.Count, unit)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *NotExportedError) Unwrap() error { return e.Err }

// spanTally counts the sampled spans ended and what became of their
// exports, so that a Shutdown can say how many it did not send.
type spanTally struct {
	ended, delivered, failed atomic.Int64
}

// endCounter is a span processor counting the sampled spans ended. It
// is registered before the batcher, so that a span is counted before its
// export may be.
type endCounter struct{ t *spanTally }

func (c endCounter) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (c endCounter) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.t.ended.Add(1)
	}
}

func (endCounter) Shutdown(context.Context) error   { return nil }
func (endCounter) ForceFlush(context.Context) error { return nil }

// settle counts an export of n spans that answered err.
func (t *spanTally) settle(n int, err error) {
	failed := 0
	if err != nil {
		failed = n
		if rejected, ok := partialSuccess(err); ok {
			failed = int(min(rejected, int64(n)))
		}
	}
	t.delivered.Add(int64(n - failed))
	t.failed.Add(int64(failed))
}

// shutdown stops tp within ctx and answers a *NotExportedError counting
// the spans that were neither delivered nor had failed before it began
// (those were said in the export failures' log already).
func (t *spanTally) shutdown(ctx context.Context, tp *sdktrace.TracerProvider) error {
	failedBefore := t.failed.Load()
	err := tp.Shutdown(ctx)
	if lost := t.ended.Load() - t.delivered.Load() - failedBefore; lost > 0 {
		return &NotExportedError{Signal: "traces", Count: lost, Err: err}
	}
	return err
}
