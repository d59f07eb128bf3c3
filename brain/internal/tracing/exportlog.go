package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
	// secrets are left out of what is logged (see headerSecrets).
	secrets []string

	mu      sync.Mutex
	last    time.Time
	skipped int
}

func newExportLog(log *slog.Logger, signal string, headers map[string]string) *exportLog {
	if log == nil {
		log = slog.Default()
	}
	return &exportLog{log: log, signal: signal, secrets: headerSecrets(headers)}
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
	l.log.Warn("telemetry export failed", "signal", l.signal, "err", boundedError(hideSecrets(err.Error(), l.secrets)), "failures_not_logged", skipped)
}

// minSecret is the length under which a header value (or a word of it) is
// not taken for a credential: hiding every "1" or "on" of a message would
// hide nothing and garble it.
const minSecret = 6

// headerSecrets answers what the headers of an export may hold as
// credentials, longest first: each value, and each word of a value
// ("Bearer <token>"), of at least minSecret bytes. A collector refusing
// an export may quote them in its answer, which the log says.
func headerSecrets(headers map[string]string) []string {
	var out []string
	for _, v := range headers {
		if len(v) >= minSecret {
			out = append(out, v)
		}
		if words := strings.Fields(v); len(words) > 1 {
			for _, w := range words {
				if len(w) >= minSecret {
					out = append(out, w)
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return slices.Compact(out)
}

// hideSecrets answers msg with every secret in it replaced by [redacted].
func hideSecrets(msg string, secrets []string) string {
	for _, s := range secrets {
		msg = strings.ReplaceAll(msg, s, "[redacted]")
	}
	return msg
}

// boundedError answers msg within maxExportError bytes, cut at a
// character boundary and saying how many bytes it left out.
func boundedError(msg string) string {
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
	drops *dropLog
	tally *spanTally
}

func (f failureLogging) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := f.SpanExporter.ExportSpans(ctx, exportable(spans))
	if f.tally.settle(len(spans), err) > 0 {
		f.drops.delivered()
	}
	if err != nil {
		f.log.failed(err)
	}
	return nil
}
