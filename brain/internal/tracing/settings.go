package tracing

import (
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"strings"
	"time"
)

// Protocols of the OTLP exporters.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultServiceName is service.name when Settings.ServiceName is empty.
const DefaultServiceName = "brain"

// Exporters a signal may name (OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER).
const (
	ExporterOTLP = "otlp"
	ExporterNone = "none"
)

// Compressions of an OTLP export (OTEL_EXPORTER_OTLP_*COMPRESSION).
const (
	CompressionGzip = "gzip"
	CompressionNone = "none"
)

// Settings are the OTLP export settings: the general ones
// (OTEL_EXPORTER_OTLP_*) and those of each signal
// (OTEL_EXPORTER_OTLP_TRACES_*, OTEL_EXPORTER_OTLP_LOGS_*), which win.
type Settings struct {
	Endpoint string
	Protocol string
	Headers  map[string]string
	Insecure bool
	Timeout  time.Duration
	// Compression is gzip or none (the default).
	Compression string

	Traces Signal
	Logs   Signal

	// ServiceName is the resource's service.name (OTEL_SERVICE_NAME).
	ServiceName string
	// Resource are more attributes of the resource
	// (OTEL_RESOURCE_ATTRIBUTES); ServiceName wins over a service.name
	// among them only when it is set.
	Resource map[string]string
	// Disabled exports nothing whatever else is set (OTEL_SDK_DISABLED).
	Disabled bool
	// Log receives the failures of exports (nil: slog.Default()): the
	// first, then at most one a minute with the count of those not
	// logged.
	Log *slog.Logger
	// SpansDropped, if set, is told of spans that were not exported and
	// why (DropQueueFull, DropExportFailed). It is called from the
	// goroutine that ended the span or from the exporter's, and must not
	// block.
	SpansDropped func(reason string, n int)
}

// Signal are the settings of one signal. Endpoint is its full URL.
type Signal struct {
	// Exporter is otlp (the default) or none, which exports nothing of
	// this signal (OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER).
	Exporter    string
	Endpoint    string
	Protocol    string
	Headers     map[string]string
	Insecure    bool
	Timeout     time.Duration
	Compression string
}

// resolved is one signal's effective settings.
type resolved struct {
	Signal
	path string // the URL path appended to a general endpoint
}

// signal answers the effective settings of the traces ("traces") or logs
// ("logs") signal; an empty Endpoint means the signal is not exported.
func (s Settings) signal(name string) (resolved, error) {
	sig := s.Traces
	if name == "logs" {
		sig = s.Logs
	}
	r := resolved{path: "/v1/" + name}
	switch sig.Exporter {
	case "", ExporterOTLP:
	case ExporterNone:
		return r, nil
	default:
		return resolved{}, fmt.Errorf("tracing: %s exporter %q: want %s or %s", name, sig.Exporter, ExporterOTLP, ExporterNone)
	}
	r.Compression = first(sig.Compression, s.Compression, CompressionNone)
	if r.Compression != CompressionGzip && r.Compression != CompressionNone {
		return resolved{}, fmt.Errorf("tracing: %s compression %q: want %s or %s", name, r.Compression, CompressionGzip, CompressionNone)
	}
	if s.Disabled {
		return r, nil
	}
	r.Protocol = first(sig.Protocol, s.Protocol, ProtocolHTTP)
	if r.Protocol != ProtocolHTTP && r.Protocol != ProtocolGRPC {
		return resolved{}, fmt.Errorf("tracing: %s protocol %q: want %s or %s", name, r.Protocol, ProtocolHTTP, ProtocolGRPC)
	}
	switch {
	case sig.Endpoint != "":
		r.Endpoint = sig.Endpoint
	case s.Endpoint != "" && r.Protocol == ProtocolHTTP:
		r.Endpoint = strings.TrimRight(s.Endpoint, "/") + r.path
	default:
		r.Endpoint = s.Endpoint
	}
	secure := false
	if r.Endpoint != "" {
		u, err := url.Parse(r.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			// Not quoted: the URL may carry credentials.
			return resolved{}, fmt.Errorf("tracing: %s endpoint: want an absolute http or https URL", name)
		}
		if u.User != nil {
			// The exporters send only the host and path: the credentials
			// would go nowhere, and the export unauthenticated.
			return resolved{}, fmt.Errorf("tracing: %s endpoint: credentials in the URL are not sent; give them as a header (OTEL_EXPORTER_OTLP_HEADERS)", name)
		}
		if u.RawQuery != "" || u.ForceQuery || strings.Contains(r.Endpoint, "#") {
			// Nor a query or a fragment: a key given as a parameter would
			// go nowhere too (and a general endpoint's would swallow the
			// path appended to it).
			return resolved{}, fmt.Errorf("tracing: %s endpoint: a query or fragment in the URL is not sent; give credentials as a header (OTEL_EXPORTER_OTLP_HEADERS)", name)
		}
		secure = u.Scheme == "https"
	}
	r.Headers = maps.Clone(s.Headers)
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	maps.Copy(r.Headers, sig.Headers)
	// An https endpoint is spoken to with TLS whatever Insecure says: the
	// scheme of an endpoint wins over OTEL_EXPORTER_OTLP_INSECURE, so an
	// export and its headers never go in clear text to it.
	r.Insecure = (s.Insecure || sig.Insecure) && !secure
	r.Timeout = sig.Timeout
	if r.Timeout <= 0 {
		r.Timeout = s.Timeout
	}
	return r, nil
}

// optionSet are one OTLP exporter package's option constructors.
type optionSet[O any] struct {
	endpoint func(string) O
	headers  func(map[string]string) O
	insecure func() O
	timeout  func(time.Duration) O
	gzip     O
}

// exporterOptions answers the options of an exporter of the signal sig,
// the same decisions for every exporter package.
func exporterOptions[O any](sig resolved, o optionSet[O]) []O {
	opts := []O{o.endpoint(sig.Endpoint), o.headers(sig.Headers)}
	if sig.Insecure {
		opts = append(opts, o.insecure())
	}
	if sig.Timeout > 0 {
		opts = append(opts, o.timeout(sig.Timeout))
	}
	if sig.Compression == CompressionGzip {
		opts = append(opts, o.gzip)
	}
	return opts
}

func first(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

// ParseHeaders parses the value of OTEL_EXPORTER_OTLP_HEADERS: comma
// separated key=value pairs whose values are URL-encoded. The error never
// quotes a value (headers carry credentials).
func ParseHeaders(v string) (map[string]string, error) {
	out := map[string]string{}
	for i, pair := range strings.Split(v, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, val, ok := strings.Cut(pair, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("entry %d is not key=value", i+1)
		}
		dec, err := url.PathUnescape(strings.TrimSpace(val))
		if err != nil {
			return nil, fmt.Errorf("entry %d (%s): the value is not URL-encoded", i+1, k)
		}
		out[k] = dec
	}
	return out, nil
}
