package main

import (
	"strings"
	"testing"
	"time"
)

// TestOTLPFromEnv maps the OTEL_* variables into brain.OTLP and names the
// variable of each malformed value, never quoting a header value.
func TestOTLPFromEnv(t *testing.T) {
	vars := map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":         "http://collector:4318",
		"OTEL_EXPORTER_OTLP_HEADERS":          "api-key=sekrit%2C1,x-tenant=t",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL":  "grpc",
		"OTEL_EXPORTER_OTLP_TRACES_INSECURE":  "true",
		"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT":     "2500",
		"OTEL_SERVICE_NAME":                   "brain-eu",
		"OTEL_EXPORTER_OTLP_COMPRESSION":      "GZIP",
		"OTEL_EXPORTER_OTLP_LOGS_COMPRESSION": "none",
		"OTEL_TRACES_EXPORTER":                "none",
		"OTEL_LOGS_EXPORTER":                  "otlp",
		"OTEL_RESOURCE_ATTRIBUTES":            "deployment.environment=eu-1,team=agents%20core",
		"OTEL_SDK_DISABLED":                   "true",
	}
	env := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	o, err := otlpFromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	if o.Endpoint != "http://collector:4318" || o.Headers["api-key"] != "sekrit,1" || o.Headers["x-tenant"] != "t" ||
		o.TracesProtocol != "grpc" || !o.TracesInsecure || o.LogsTimeout != 2500*time.Millisecond || o.ServiceName != "brain-eu" ||
		o.Compression != "gzip" || o.LogsCompression != "none" || o.TracesCompression != "" ||
		o.TracesExporter != "none" || o.LogsExporter != "otlp" || !o.Disabled ||
		o.ResourceAttributes["deployment.environment"] != "eu-1" || o.ResourceAttributes["team"] != "agents core" {
		t.Errorf("otlpFromEnv = %+v", o)
	}

	vars = map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "sekrit-without-equals",
		"OTEL_EXPORTER_OTLP_INSECURE":       "maybe",
		"OTEL_EXPORTER_OTLP_LOGS_TIMEOUT":   "-3",
		"OTEL_EXPORTER_OTLP_COMPRESSION":    "zstd",
		"OTEL_TRACES_EXPORTER":              "jaeger",
		"OTEL_RESOURCE_ATTRIBUTES":          "sekrit-attribute",
		"OTEL_SDK_DISABLED":                 "perhaps",
	}
	_, err = otlpFromEnv(env)
	if err == nil {
		t.Fatal("malformed values accepted")
	}
	for name := range vars {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
	if strings.Contains(err.Error(), "sekrit") {
		t.Errorf("the error quotes a header: %v", err)
	}
}
