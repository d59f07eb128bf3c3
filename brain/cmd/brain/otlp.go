package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain"
)

// otlpFromEnv reads the standard OpenTelemetry exporter variables
// (OTEL_EXPORTER_OTLP_*, OTEL_EXPORTER_OTLP_TRACES_*,
// OTEL_EXPORTER_OTLP_LOGS_*, OTEL_SERVICE_NAME). Each error names its
// variable; none quotes a header value.
func otlpFromEnv(env func(string) (string, bool)) (brain.OTLP, error) {
	var o brain.OTLP
	var errs []error
	str := func(p *string, name string) {
		if v, ok := env(name); ok {
			*p = strings.TrimSpace(v)
		}
	}
	headers := func(p *map[string]string, name string) {
		if v, ok := env(name); ok {
			h, err := brain.ParseOTLPHeaders(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
			*p = h
		}
	}
	boolean := func(p *bool, name string) {
		if v, ok := env(name); ok && v != "" {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want true or false", name, v))
			}
			*p = b
		}
	}
	millis := func(p *time.Duration, name string) {
		if v, ok := env(name); ok && v != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("%s=%q: want a non-negative number of milliseconds", name, v))
			}
			*p = time.Duration(n) * time.Millisecond
		}
	}
	for _, sig := range []struct {
		prefix             string
		endpoint, protocol *string
		headers            *map[string]string
		insecure           *bool
		timeout            *time.Duration
	}{
		{"OTEL_EXPORTER_OTLP_", &o.Endpoint, &o.Protocol, &o.Headers, &o.Insecure, &o.Timeout},
		{"OTEL_EXPORTER_OTLP_TRACES_", &o.TracesEndpoint, &o.TracesProtocol, &o.TracesHeaders, &o.TracesInsecure, &o.TracesTimeout},
		{"OTEL_EXPORTER_OTLP_LOGS_", &o.LogsEndpoint, &o.LogsProtocol, &o.LogsHeaders, &o.LogsInsecure, &o.LogsTimeout},
	} {
		str(sig.endpoint, sig.prefix+"ENDPOINT")
		str(sig.protocol, sig.prefix+"PROTOCOL")
		headers(sig.headers, sig.prefix+"HEADERS")
		boolean(sig.insecure, sig.prefix+"INSECURE")
		millis(sig.timeout, sig.prefix+"TIMEOUT")
	}
	str(&o.ServiceName, "OTEL_SERVICE_NAME")
	return o, errors.Join(errs...)
}
