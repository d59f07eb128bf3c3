package brain

import (
	"github.com/brain-in-go/brain/brain/internal/tracing"
)

// ParseOTLPHeaders parses the value of an OTEL_EXPORTER_OTLP_*HEADERS
// variable: comma separated key=value pairs with URL-encoded values. Its
// error never quotes a value.
func ParseOTLPHeaders(v string) (map[string]string, error) { return tracing.ParseHeaders(v) }

func (o OTLP) settings() tracing.Settings {
	return tracing.Settings{
		Endpoint: o.Endpoint, Protocol: o.Protocol, Headers: o.Headers, Insecure: o.Insecure, Timeout: o.Timeout,
		Traces: tracing.Signal{Endpoint: o.TracesEndpoint, Protocol: o.TracesProtocol, Headers: o.TracesHeaders,
			Insecure: o.TracesInsecure, Timeout: o.TracesTimeout},
		Logs: tracing.Signal{Endpoint: o.LogsEndpoint, Protocol: o.LogsProtocol, Headers: o.LogsHeaders,
			Insecure: o.LogsInsecure, Timeout: o.LogsTimeout},
		ServiceName: o.ServiceName,
	}
}
