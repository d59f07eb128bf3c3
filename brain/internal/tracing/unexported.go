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

// spanTally counts the sampled spans ended and what became of them, so
// that a Shutdown can say how many it did not send.
type spanTally struct {
	ended, delivered, failed, dropped atomic.Int64
	// queued are the spans handed to the batcher and not yet exported.
	queued atomic.Int64
	// onDrop is Settings.SpansDropped.
	onDrop func(reason string, n int)
}

// settle counts an export of n spans that answered err, and answers how
// many the collector took.
func (t *spanTally) settle(n int, err error) int {
	failed := 0
	if err != nil {
		failed = n
		if rejected, ok := partialSuccess(err); ok {
			failed = int(min(rejected, int64(n)))
		}
	}
	t.queued.Add(-int64(n))
	t.delivered.Add(int64(n - failed))
	t.failed.Add(int64(failed))
	t.report(DropExportFailed, failed)
	return n - failed
}

// shutdown stops tp within ctx and answers a *NotExportedError counting
// the spans that were neither delivered, nor dropped, nor had failed before
// it began (those were counted and said in the log already).
func (t *spanTally) shutdown(ctx context.Context, tp *sdktrace.TracerProvider) error {
	failedBefore := t.failed.Load()
	err := tp.Shutdown(ctx)
	if lost := t.ended.Load() - t.dropped.Load() - t.delivered.Load() - failedBefore; lost > 0 {
		return &NotExportedError{Signal: "traces", Count: lost, Err: err}
	}
	return err
}
