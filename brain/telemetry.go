package brain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/brain-in-go/brain/brain/internal/telemetry"
	"github.com/brain-in-go/brain/brain/internal/tracing"
)

// openTelemetry starts the telemetry pipeline over the configured sinks:
// the JSON-lines file, OTLP logs when OpenTelemetry names a logs
// endpoint, or both; without either it counts the records it drops.
func openTelemetry(ctx context.Context, cfg Telemetry, o OTLP, log *slog.Logger) (*telemetry.Pipeline, error) {
	opts := telemetry.Options{
		MaxRecordBytes: cfg.MaxRecordBytes,
		SessionRate:    cfg.SessionRate,
		GlobalRate:     cfg.Rate,
		Logger:         log,
	}
	var file *telemetry.File
	if cfg.File != "" {
		f, err := telemetry.OpenFile(cfg.File, cfg.MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("brain: Config.Telemetry.File: %w", err)
		}
		file = f
	}
	otlp := &otlpSink{log: log}
	emit, stop, err := tracing.NewLogSink(ctx, o.settings(log), otlp.delivered)
	if err != nil {
		if file != nil {
			_ = file.Close(ctx)
		}
		return nil, fmt.Errorf("brain: Config.OTLP: %w", err)
	}
	otlp.emit, otlp.stop = emit, stop
	switch {
	case emit != nil && file != nil:
		opts.Sink = fileAndOTLP{file: file, otlp: otlp}
	case emit != nil:
		opts.Sink = otlp
	case file != nil:
		opts.Sink = file
	}
	return telemetry.New(opts), nil
}

// otlpEventName is the event name of a telemetry record exported as an
// OTLP log record.
const otlpEventName = "brain.telemetry"

// otlpSink exports each entry as one OTLP log record: the record as its
// body, Brain's origin as its attributes. An entry counts as written once
// the receiver accepted it.
type otlpSink struct {
	emit tracing.LogEmitter
	stop tracing.Shutdown
	log  *slog.Logger

	mu     sync.Mutex
	report func(delivered, failed int)
	// taken and told number the records emitted and those whose outcome
	// the exporter reported (it reports them in order).
	taken, told uint64
	// uncounted are the numbers of records taken, in order, whose entry
	// was counted already (dropped by the file): their outcome is not
	// reported.
	uncounted []uint64
}

var _ telemetry.AsyncSink = (*otlpSink)(nil)

func (s *otlpSink) ReportTo(report func(delivered, failed int)) {
	s.mu.Lock()
	s.report = report
	s.mu.Unlock()
}

func (s *otlpSink) Write(ctx context.Context, e telemetry.Entry) error {
	return s.export(ctx, e, true)
}

// export emits e; its outcome is reported only when counted.
func (s *otlpSink) export(ctx context.Context, e telemetry.Entry, counted bool) error {
	attrs := map[string]any{
		"brain.session_id":  e.SessionID,
		"brain.origin.kind": e.Origin.Kind,
	}
	if e.Origin.Sequence != 0 {
		attrs["brain.origin.sequence"] = int64(e.Origin.Sequence)
	}
	if env := e.Origin.Environment; env != nil {
		attrs["brain.origin.environment.name"] = env.Name
		attrs["brain.origin.environment.sequence"] = int64(env.Sequence)
	}
	if e.Turn != 0 {
		attrs["brain.turn"] = int64(e.Turn)
	}
	if e.Activation != 0 {
		attrs["brain.activation"] = int64(e.Activation)
	}
	if e.Tool != "" {
		attrs["brain.tool"] = e.Tool
	}
	if e.Environment != "" {
		attrs["brain.environment"] = e.Environment
	}
	// Numbered before it is emitted: the exporter may report it before
	// Emit returns. Entries are written from one goroutine.
	s.mu.Lock()
	n := s.taken
	s.taken++
	if !counted {
		s.uncounted = append(s.uncounted, n)
	}
	s.mu.Unlock()
	// The entry's record is not held past Write: the exporter batches
	// its own copy.
	if err := s.emit.Emit(ctx, otlpEventName, attrs, bytes.Clone(e.Record), time.UnixMilli(e.RecordedAtMs)); err != nil {
		s.mu.Lock()
		s.taken--
		if !counted {
			s.uncounted = s.uncounted[:len(s.uncounted)-1]
		}
		s.mu.Unlock()
		return fmt.Errorf("OTLP logs: %w", err)
	}
	return nil
}

// delivered is told what became of the next delivered+failed records
// emitted, and reports that of the counted ones. A partial success does
// not say which records the receiver rejected: they are taken to be
// counted ones.
func (s *otlpSink) delivered(delivered, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	end := s.told + uint64(delivered+failed)
	s.told = end
	skip := 0
	for skip < len(s.uncounted) && s.uncounted[skip] < end {
		skip++
	}
	s.uncounted = s.uncounted[skip:]
	counted := delivered + failed - skip
	failed = min(failed, counted)
	if s.report != nil && counted > 0 {
		s.report(counted-failed, failed)
	}
}

// Close flushes the records not yet exported, within ctx. An export that
// fails then (the collector is down) does not fail the shutdown, as one
// of the spans does not: the records it held are dropped (reported
// failed), and the failure is said in the log.
func (s *otlpSink) Close(ctx context.Context) error {
	if err := s.stop(ctx); err != nil {
		logExportShutdown(s.log, "telemetry export at shutdown", "records_dropped", err)
	}
	return nil
}

// fileAndOTLP writes every entry to the file and exports it. An entry
// counts as written when the file took it and the receiver accepted it,
// as dropped (once) when either failed.
type fileAndOTLP struct {
	file telemetry.Sink
	otlp *otlpSink
}

var _ telemetry.AsyncSink = fileAndOTLP{}

func (b fileAndOTLP) ReportTo(report func(delivered, failed int)) { b.otlp.ReportTo(report) }

func (b fileAndOTLP) Write(ctx context.Context, e telemetry.Entry) error {
	ferr := b.file.Write(ctx, e)
	// Exported even when the file failed, but then not counted again.
	oerr := b.otlp.export(ctx, e, ferr == nil)
	if ferr != nil {
		return ferr
	}
	return oerr
}

func (b fileAndOTLP) Close(ctx context.Context) error {
	return errors.Join(b.file.Close(ctx), b.otlp.Close(ctx))
}
