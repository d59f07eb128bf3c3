package tracing

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"

	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// Delivery is told what became of the log records a LogEmitter took, in
// the order Emit took them: delivered are the records the receiver
// accepted, failed those it did not (an export it refused or that did not
// reach it, the rejected_log_records of an OTLP partial success) and, at
// Shutdown, those never exported. It is called from the exporter's
// goroutine and must not block.
type Delivery func(delivered, failed int)

// maxOutstanding bounds the records taken but not yet reported: it is the
// size of the batch queue, which thus never overflows (a full queue would
// drop records silently).
const maxOutstanding = 2048

// ErrLogQueueFull is what Emit answers when the records taken and not yet
// exported fill the queue (the receiver is slow or down).
var ErrLogQueueFull = errors.New("tracing: the log export queue is full")

// ErrLogSinkClosed is what Emit answers after Shutdown.
var ErrLogSinkClosed = errors.New("tracing: the log sink is shut down")

// ledger counts the records emitted and not yet reported.
type ledger struct {
	report Delivery

	mu          sync.Mutex
	outstanding int
	failed      int64 // records reported failed by an export
	closed      bool
}

// take counts one more record on its way to the exporter.
func (l *ledger) take() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return ErrLogSinkClosed
	case l.outstanding >= maxOutstanding:
		return ErrLogQueueFull
	}
	l.outstanding++
	return nil
}

// settle reports the outcome of an export of delivered+failed records.
func (l *ledger) settle(delivered, failed int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return // reported as failed already
	}
	l.outstanding -= delivered + failed
	l.failed += int64(failed)
	if l.report != nil {
		l.report(delivered, failed)
	}
}

// failures answers how many records exports reported failed so far.
func (l *ledger) failures() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// close reports the records never exported as failed, and answers how
// many records exports reported failed since failedBefore was read and
// close did: those not sent. Later exports are not reported.
func (l *ledger) close(failedBefore int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0
	}
	l.closed = true
	if l.outstanding > 0 && l.report != nil {
		l.report(0, l.outstanding)
	}
	lost := l.failed - failedBefore + int64(l.outstanding)
	l.outstanding = 0
	return lost
}

// countingExporter reports to its ledger what the receiver made of each
// export.
type countingExporter struct {
	sdklog.Exporter
	l        *ledger
	failures *exportLog
}

// Export sends records in requests bounded by maxExportBytes, and
// reports each request's outcome in order.
func (c countingExporter) Export(ctx context.Context, records []sdklog.Record) error {
	for _, chunk := range exportChunks(records) {
		c.export(ctx, chunk)
	}
	return nil
}

func (c countingExporter) export(ctx context.Context, records []sdklog.Record) {
	err := c.Exporter.Export(ctx, records)
	if n := len(records); n > 0 {
		failed := 0
		if err != nil {
			failed = n
			if rejected, ok := partialSuccess(err); ok {
				failed = int(min(rejected, int64(n)))
			}
		}
		c.l.settle(n-failed, failed)
	}
	if err != nil {
		// Said here, not to OpenTelemetry's global handler (see
		// exportLog).
		c.failures.failed(err)
	}
}

// partialSuccess answers how many records an OTLP partial success
// rejected when err reports one and nothing else. The exporters answer
// it as an error of a type of their own (internal.PartialSuccess, whose
// RejectedItems is rejected_log_records), read here by its fields.
func partialSuccess(err error) (int64, bool) {
	var rejected int64
	found, other := false, false
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		v := reflect.ValueOf(err)
		t := v.Type()
		if t.Kind() == reflect.Struct && t.Name() == "PartialSuccess" &&
			strings.HasPrefix(t.PkgPath(), "go.opentelemetry.io/otel/exporters/otlp/") {
			if f := v.FieldByName("RejectedItems"); f.IsValid() && f.CanInt() {
				found = true
				rejected = max(rejected, f.Int())
				return
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		default:
			other = true
		}
	}
	walk(err)
	return rejected, found && !other
}
