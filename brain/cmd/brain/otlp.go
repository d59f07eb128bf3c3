package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brain-in-go/brain/brain"
)

// otlpFromEnv reads the standard OpenTelemetry exporter variables
// (OTEL_EXPORTER_OTLP_*, OTEL_EXPORTER_OTLP_TRACES_*,
// OTEL_EXPORTER_OTLP_LOGS_*, OTEL_TRACES_EXPORTER, OTEL_LOGS_EXPORTER,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED). Each
// error names its variable; none quotes a header or attribute value.
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
	// oneOf takes a lower-cased value among want; an empty value is unset.
	oneOf := func(p *string, name string, want ...string) {
		v, ok := env(name)
		v = strings.ToLower(strings.TrimSpace(v))
		if !ok || v == "" {
			return
		}
		if !slices.Contains(want, v) {
			errs = append(errs, fmt.Errorf("%s=%q: want one of %s", name, v, strings.Join(want, ", ")))
			return
		}
		*p = v
	}
	millis := func(p *time.Duration, name string) {
		if v, ok := env(name); ok && v != "" {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
				errs = append(errs, fmt.Errorf("%s=%q: want a number of milliseconds from 0 to %d", name, v, math.MaxInt64/int64(time.Millisecond)))
				return
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
		compression        *string
	}{
		{"OTEL_EXPORTER_OTLP_", &o.Endpoint, &o.Protocol, &o.Headers, &o.Insecure, &o.Timeout, &o.Compression},
		{"OTEL_EXPORTER_OTLP_TRACES_", &o.TracesEndpoint, &o.TracesProtocol, &o.TracesHeaders, &o.TracesInsecure, &o.TracesTimeout, &o.TracesCompression},
		{"OTEL_EXPORTER_OTLP_LOGS_", &o.LogsEndpoint, &o.LogsProtocol, &o.LogsHeaders, &o.LogsInsecure, &o.LogsTimeout, &o.LogsCompression},
	} {
		str(sig.endpoint, sig.prefix+"ENDPOINT")
		str(sig.protocol, sig.prefix+"PROTOCOL")
		headers(sig.headers, sig.prefix+"HEADERS")
		boolean(sig.insecure, sig.prefix+"INSECURE")
		millis(sig.timeout, sig.prefix+"TIMEOUT")
		oneOf(sig.compression, sig.prefix+"COMPRESSION", "gzip", "none")
	}
	oneOf(&o.TracesExporter, "OTEL_TRACES_EXPORTER", "otlp", "none")
	oneOf(&o.LogsExporter, "OTEL_LOGS_EXPORTER", "otlp", "none")
	str(&o.ServiceName, "OTEL_SERVICE_NAME")
	headers(&o.ResourceAttributes, "OTEL_RESOURCE_ATTRIBUTES")
	boolean(&o.Disabled, "OTEL_SDK_DISABLED")
	return o, errors.Join(errs...)
}
