package brain

import (
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
