package brain

import (
	"errors"
	"log/slog"

	"github.com/brain-in-go/brain/brain/internal/tracing"
)

// ParseOTLPHeaders parses the value of an OTEL_EXPORTER_OTLP_*HEADERS
// variable: comma separated key=value pairs with URL-encoded values. Its
// error never quotes a value.
func ParseOTLPHeaders(v string) (map[string]string, error) { return tracing.ParseHeaders(v) }

// settings are the exporters' settings; their failures go to log.
func (o OTLP) settings(log *slog.Logger) tracing.Settings {
	return tracing.Settings{
		Endpoint: o.Endpoint, Protocol: o.Protocol, Headers: o.Headers, Insecure: o.Insecure, Timeout: o.Timeout,
		Compression: o.Compression,
		Traces: tracing.Signal{Exporter: o.TracesExporter, Endpoint: o.TracesEndpoint, Protocol: o.TracesProtocol,
			Headers: o.TracesHeaders, Insecure: o.TracesInsecure, Timeout: o.TracesTimeout, Compression: o.TracesCompression},
		Logs: tracing.Signal{Exporter: o.LogsExporter, Endpoint: o.LogsEndpoint, Protocol: o.LogsProtocol,
			Headers: o.LogsHeaders, Insecure: o.LogsInsecure, Timeout: o.LogsTimeout, Compression: o.LogsCompression},
		ServiceName: o.ServiceName, Resource: o.ResourceAttributes, Disabled: o.Disabled, Log: log,
	}
}

// logExportShutdown says in log that an exporter's shutdown did not send
// all it held: msg, the count of what it dropped under the key count
// when it knows it, and the reason.
func logExportShutdown(log *slog.Logger, msg, count string, err error) {
	var lost *tracing.NotExportedError
	if !errors.As(err, &lost) {
		log.Warn(msg, "err", err)
		return
	}
	attrs := []any{count, lost.Count}
	if lost.Err != nil {
		attrs = append(attrs, "err", lost.Err)
	}
	log.Warn(msg, attrs...)
}
