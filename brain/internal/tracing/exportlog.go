package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// exportLogEvery spaces the log lines of an exporter's failures.
const exportLogEvery = time.Minute

// maxExportError bounds the bytes of a failed export's error said in the
// log. The exporters quote what the collector answered (the body of a
// refusal, the message of a partial success), up to megabytes of it.
const maxExportError = 1024

// exportLog says the failed exports of one signal in the server's log:
// the first, then at most one each exportLogEvery, with the count of
// those in between. An exporter wrapped with it answers its batcher
// success, so that OpenTelemetry's global error handler, which writes
// each failed batch to the standard library's log (stderr, whatever the
// server's own logging), never hears of them.
type exportLog struct {
	log    *slog.Logger
	signal string

	mu      sync.Mutex
	last    time.Time
	skipped int
}

func newExportLog(log *slog.Logger, signal string) *exportLog {
	if log == nil {
		log = slog.Default()
	}
	return &exportLog{log: log, signal: signal}
}

// failed records an export that failed with err.
func (l *exportLog) failed(err error) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < exportLogEvery {
		l.skipped++
		l.mu.Unlock()
		return
	}
	skipped := l.skipped
	l.last, l.skipped = now, 0
	l.mu.Unlock()
	l.log.Warn("telemetry export failed", "signal", l.signal, "err", boundedError(err), "failures_not_logged", skipped)
}

// boundedError answers the text of err within maxExportError bytes, cut
// at a character boundary and saying how many bytes it left out.
func boundedError(err error) string {
	msg := err.Error()
	if len(msg) <= maxExportError {
		return msg
	}
	cut := maxExportError
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d more bytes)", msg[:cut], len(msg)-cut)
}

// failureLogging is a span exporter whose failures go to an exportLog,
// and whose exports are counted in a spanTally.
type failureLogging struct {
	sdktrace.SpanExporter
	log   *exportLog
	tally *spanTally
}

func (f failureLogging) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := f.SpanExporter.ExportSpans(ctx, spans)
	f.tally.settle(len(spans), err)
	if err != nil {
		f.log.failed(err)
	}
	return nil
}
