package brain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/brain-in-go/brain/brain/internal/telemetry"
	"github.com/brain-in-go/brain/brain/internal/tracing"
)

// openTelemetry starts the telemetry pipeline over the configured sinks:
// the JSON-lines file, OTLP logs when OpenTelemetry names a logs
// endpoint, or both; without either it counts the records it drops.
func openTelemetry(ctx context.Context, cfg Telemetry, otlp OTLP, log *slog.Logger) (*telemetry.Pipeline, error) {
	opts := telemetry.Options{
		MaxRecordBytes: cfg.MaxRecordBytes,
		SessionRate:    cfg.SessionRate,
		GlobalRate:     cfg.Rate,
		Logger:         log,
	}
	var sinks []telemetry.Sink
	if cfg.File != "" {
		f, err := telemetry.OpenFile(cfg.File, cfg.MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("brain: Config.Telemetry.File: %w", err)
		}
		sinks = append(sinks, f)
	}
	emit, stop, err := tracing.NewLogSink(ctx, otlp.settings())
	if err != nil {
		for _, s := range sinks {
			_ = s.Close(ctx)
		}
		return nil, fmt.Errorf("brain: Config.OTLP: %w", err)
	}
	if emit != nil {
		sinks = append(sinks, otlpSink{emit: emit, stop: stop})
	}
	switch len(sinks) {
	case 1:
		opts.Sink = sinks[0]
	case 2:
		opts.Sink = bothSinks(sinks)
	}
	return telemetry.New(opts), nil
}

// otlpEventName is the event name of a telemetry record exported as an
// OTLP log record.
const otlpEventName = "brain.telemetry"

// otlpSink exports each entry as one OTLP log record: the record as its
// body, Brain's origin as its attributes.
type otlpSink struct {
	emit tracing.LogEmitter
	stop tracing.Shutdown
}

func (s otlpSink) Write(ctx context.Context, e telemetry.Entry) error {
	attrs := map[string]any{
		"brain.session_id":  e.SessionID,
		"brain.origin.kind": e.Origin.Kind,
	}
	if e.Origin.Sequence != 0 {
		attrs["brain.origin.sequence"] = int64(e.Origin.Sequence)
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
	// The entry's record is not held past Write: the exporter batches
	// its own copy.
	s.emit.Emit(ctx, otlpEventName, attrs, bytes.Clone(e.Record), time.UnixMilli(e.RecordedAtMs))
	return nil
}

func (s otlpSink) Close(ctx context.Context) error { return s.stop(ctx) }

// bothSinks writes every entry to each sink.
type bothSinks []telemetry.Sink

func (b bothSinks) Write(ctx context.Context, e telemetry.Entry) error {
	var errs []error
	for _, s := range b {
		errs = append(errs, s.Write(ctx, e))
	}
	return errors.Join(errs...)
}

func (b bothSinks) Close(ctx context.Context) error {
	var errs []error
	for _, s := range b {
		errs = append(errs, s.Close(ctx))
	}
	return errors.Join(errs...)
}
