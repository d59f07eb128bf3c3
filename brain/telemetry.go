package brain

import (
	"fmt"
	"log/slog"

	"github.com/brain-in-go/brain/brain/internal/telemetry"
)

// openTelemetry starts the telemetry pipeline over the configured sink;
// without one it counts the records it drops.
func openTelemetry(cfg Telemetry, log *slog.Logger) (*telemetry.Pipeline, error) {
	opts := telemetry.Options{
		MaxRecordBytes: cfg.MaxRecordBytes,
		SessionRate:    cfg.SessionRate,
		GlobalRate:     cfg.Rate,
		Logger:         log,
	}
	if cfg.File != "" {
		f, err := telemetry.OpenFile(cfg.File, cfg.MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("brain: Config.Telemetry.File: %w", err)
		}
		opts.Sink = f
	}
	return telemetry.New(opts), nil
}
