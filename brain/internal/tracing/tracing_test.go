package tracing_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
	"go.opentelemetry.io/otel/attribute"
)

// TestTracerProviderExportsOverHTTP exports one span to the in-process
// receiver with the configured headers and service name.
func TestTracerProviderExportsOverHTTP(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	tp, shutdown, err := tracing.NewTracerProvider(ctx, tracing.Settings{
		Endpoint: rcv.URL(), Headers: map[string]string{"x-collector-key": "general", "x-other": "o"},
		Traces:      tracing.Signal{Headers: map[string]string{"x-collector-key": "traces"}},
		ServiceName: "brain-test",
	})
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	_, span := tp.Tracer(tracing.InstrumentationName).Start(ctx, "work")
	span.SetAttributes(attribute.Int64("brain.sequence", 7))
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Name != "work" || spans[0].Service != "brain-test" || spans[0].Attributes["brain.sequence"] != int64(7) {
		t.Fatalf("received %+v, want the span work of brain-test with brain.sequence 7", spans)
	}
	h := rcv.Headers()
	if len(h) == 0 || h[0].Get("X-Collector-Key") != "traces" || h[0].Get("X-Other") != "o" {
		t.Errorf("export headers %v: want the traces header over the general one, and the general one", h)
	}
}

// TestSignalEndpointIsUsedAsIs: a traces endpoint is the full URL; a
// general one gets /v1/traces appended. A wrong path reaches nothing.
func TestSignalEndpointIsUsedAsIs(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		s    tracing.Settings
		want int
	}{
		{tracing.Settings{Endpoint: "http://127.0.0.1:1", Traces: tracing.Signal{Endpoint: rcv.URL() + "/v1/traces"}}, 1},
		{tracing.Settings{Endpoint: rcv.URL() + "/"}, 1},
		{tracing.Settings{Traces: tracing.Signal{Endpoint: rcv.URL() + "/elsewhere"}, Timeout: time.Second}, 0},
	} {
		before := len(rcv.Spans())
		tp, shutdown, err := tracing.NewTracerProvider(ctx, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("t").Start(ctx, "s")
		span.End()
		_ = shutdown(ctx)
		if got := len(rcv.Spans()) - before; got != tc.want {
			t.Errorf("%+v: %d spans received, want %d", tc.s, got, tc.want)
		}
	}
}

// TestNothingConfiguredExportsNothing: without an endpoint there is no
// provider and no log sink.
func TestNothingConfiguredExportsNothing(t *testing.T) {
	ctx := context.Background()
	tp, shutdown, err := tracing.NewTracerProvider(ctx, tracing.Settings{Headers: map[string]string{"a": "b"}, Protocol: "grpc"})
	if err != nil || tp != nil || shutdown(ctx) != nil {
		t.Fatalf("NewTracerProvider without endpoint = %v, %v", tp, err)
	}
	// Only the other signal is configured.
	le, _, err := tracing.NewLogSink(ctx, tracing.Settings{Traces: tracing.Signal{Endpoint: "http://127.0.0.1:4318/v1/traces"}}, nil)
	if err != nil || le != nil {
		t.Fatalf("NewLogSink with a traces endpoint only = %v, %v", le, err)
	}
}

func TestSettingsRefused(t *testing.T) {
	ctx := context.Background()
	for _, s := range []tracing.Settings{
		{Endpoint: "http://127.0.0.1:4318", Protocol: "http/json"},
		{Traces: tracing.Signal{Endpoint: "http://127.0.0.1:4318", Protocol: "thrift"}},
		{Endpoint: "ftp://user:sekrit@collector"},
		{Traces: tracing.Signal{Endpoint: "collector:4317"}},
		// The exporters send only the host and path of an endpoint: its
		// credentials would silently go nowhere.
		{Endpoint: "https://user:sekrit@collector:4318"},
	} {
		_, _, err := tracing.NewTracerProvider(ctx, s)
		if err == nil {
			t.Errorf("%+v accepted", s)
			continue
		}
		if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("the error quotes the URL: %v", err)
		}
	}
	s := tracing.Settings{Logs: tracing.Signal{Endpoint: "http://sekrit@collector:4318/v1/logs"}}
	if _, _, err := tracing.NewLogSink(ctx, s, nil); err == nil || strings.Contains(err.Error(), "sekrit") {
		t.Errorf("a logs endpoint with credentials: %v", err)
	}
}

// TestEndpointQueryRefused: the exporters send an export to the host and
// path of its endpoint only, so a query (a key given as a parameter) or
// a fragment would silently go nowhere and the export unauthenticated:
// an endpoint with one is refused, and the error does not quote it.
func TestEndpointQueryRefused(t *testing.T) {
	ctx := context.Background()
	for _, sig := range []tracing.Signal{
		{Endpoint: "https://collector:4318/v1/traces?api_key=sekrit"},
		{Endpoint: "https://collector:4318/v1/traces#sekrit"},
		{Endpoint: "https://collector:4318/v1/traces?"},
		{Endpoint: "https://collector:4317?api_key=sekrit", Protocol: tracing.ProtocolGRPC},
	} {
		if _, _, err := tracing.NewTracerProvider(ctx, tracing.Settings{Traces: sig}); err == nil || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("traces endpoint %s: %v, want it refused unquoted", sig.Endpoint, err)
		}
		if _, _, err := tracing.NewLogSink(ctx, tracing.Settings{Logs: sig}, nil); err == nil || strings.Contains(err.Error(), "sekrit") {
			t.Errorf("logs endpoint %s: %v, want it refused unquoted", sig.Endpoint, err)
		}
	}
	// The general endpoint gets the signal's path appended: a query
	// would swallow it.
	if _, _, err := tracing.NewTracerProvider(ctx, tracing.Settings{Endpoint: "https://collector:4318?api_key=sekrit"}); err == nil || strings.Contains(err.Error(), "sekrit") {
		t.Errorf("general endpoint with a query: %v, want it refused unquoted", err)
	}
}

// TestLogSinkExports sends one record through the OTLP logs exporter.
func TestLogSinkExports(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	le, shutdown, err := tracing.NewLogSink(ctx, tracing.Settings{Logs: tracing.Signal{Endpoint: rcv.URL() + "/v1/logs"}}, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	le.Emit(ctx, "telemetry", map[string]any{
		"brain.session_id": "s1", "brain.sequence": uint64(12), "ok": true, "ratio": 0.5,
		"origin": map[string]any{"kind": "tool", "sequence": 9}, "tags": []any{"a", int64(2)},
	}, []byte(`{"step":1}`), at)
	le.Emit(ctx, "binary", nil, []byte{0xff, 0x00}, at)
	if err := shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	logs := rcv.Logs()
	if len(logs) != 2 {
		t.Fatalf("received %d records, want 2: %+v", len(logs), logs)
	}
	l := logs[0]
	if l.EventName != "telemetry" || l.Body != `{"step":1}` || !l.Time.Equal(at) || l.Service != tracing.DefaultServiceName {
		t.Errorf("record %+v", l)
	}
	a := l.Attributes
	origin, _ := a["origin"].(map[string]any)
	tags, _ := a["tags"].([]any)
	if a["brain.session_id"] != "s1" || a["brain.sequence"] != int64(12) || a["ok"] != true || a["ratio"] != 0.5 ||
		origin["kind"] != "tool" || origin["sequence"] != int64(9) || len(tags) != 2 || tags[1] != int64(2) {
		t.Errorf("attributes %#v", a)
	}
	if b, ok := logs[1].Body.([]byte); !ok || len(b) != 2 {
		t.Errorf("a non-UTF-8 body arrived as %#v, want its bytes", logs[1].Body)
	}
}

func TestParseHeaders(t *testing.T) {
	h, err := tracing.ParseHeaders("api-key=abc%3D1, x-tenant = t1 ,,")
	if err != nil || len(h) != 2 || h["api-key"] != "abc=1" || h["x-tenant"] != "t1" {
		t.Fatalf("ParseHeaders = %v, %v", h, err)
	}
	for _, bad := range []string{"novalue", "=v", "k=sekrit%zz"} {
		_, err := tracing.ParseHeaders(bad)
		if err == nil {
			t.Errorf("ParseHeaders(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "sekrit") {
			t.Errorf("ParseHeaders(%q) quotes the value: %v", bad, err)
		}
	}
}

func FuzzParseHeaders(f *testing.F) {
	f.Add("a=b,c=d%20e")
	f.Add("=,=")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := tracing.ParseHeaders(s)
		if err != nil {
			return
		}
		for k := range h {
			if k == "" || strings.ContainsAny(k, ",=") {
				t.Fatalf("key %q from %q", k, s)
			}
		}
	})
}

// TestExporterNoneAndDisabledExportNothing: OTEL_TRACES_EXPORTER=none,
// OTEL_LOGS_EXPORTER=none and OTEL_SDK_DISABLED leave no provider and no
// sink although an endpoint is set, and nothing reaches the receiver.
func TestExporterNoneAndDisabledExportNothing(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	for _, s := range []tracing.Settings{
		{Endpoint: rcv.URL(), Traces: tracing.Signal{Exporter: tracing.ExporterNone}, Logs: tracing.Signal{Exporter: tracing.ExporterNone}},
		{Endpoint: rcv.URL(), Disabled: true},
		{Traces: tracing.Signal{Endpoint: rcv.URL() + "/v1/traces"}, Logs: tracing.Signal{Endpoint: rcv.URL() + "/v1/logs"}, Disabled: true},
	} {
		tp, stop, err := tracing.NewTracerProvider(ctx, s)
		if err != nil || tp != nil || stop(ctx) != nil {
			t.Errorf("%+v: NewTracerProvider = %v, %v; want none", s, tp, err)
		}
		le, stop, err := tracing.NewLogSink(ctx, s, nil)
		if err != nil || le != nil || stop(ctx) != nil {
			t.Errorf("%+v: NewLogSink = %v, %v; want none", s, le, err)
		}
	}
	// One signal off leaves the other on.
	s := tracing.Settings{Endpoint: rcv.URL(), Traces: tracing.Signal{Exporter: tracing.ExporterNone}, Logs: tracing.Signal{Exporter: tracing.ExporterOTLP}}
	le, stop, err := tracing.NewLogSink(ctx, s, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink with traces off = %v, %v; want a sink", le, err)
	}
	le.Emit(ctx, "brain.telemetry", nil, []byte("on"), time.Now())
	if err := stop(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(rcv.Logs()); n != 1 || len(rcv.Spans()) != 0 {
		t.Errorf("received %d logs and %d spans, want 1 log and no span", n, len(rcv.Spans()))
	}
	for _, bad := range []tracing.Settings{
		{Endpoint: rcv.URL(), Traces: tracing.Signal{Exporter: "jaeger"}},
		{Endpoint: rcv.URL(), Compression: "zstd"},
		{Endpoint: rcv.URL(), Traces: tracing.Signal{Compression: "br"}},
	} {
		if _, _, err := tracing.NewTracerProvider(ctx, bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestResourceAttributesAndGzip: the resource carries the configured
// attributes, OTEL_SERVICE_NAME wins over a service.name among them, and
// a gzip-compressed export arrives compressed and intact.
func TestResourceAttributesAndGzip(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		s           tracing.Settings
		service     string
		compression string
	}{
		{tracing.Settings{Endpoint: rcv.URL(), Compression: tracing.CompressionGzip,
			Resource: map[string]string{"deployment.environment": "eu-1", "service.name": "from-attributes"}}, "from-attributes", "gzip"},
		{tracing.Settings{Endpoint: rcv.URL(), ServiceName: "named", Traces: tracing.Signal{Compression: tracing.CompressionNone},
			Compression: tracing.CompressionGzip, Resource: map[string]string{"deployment.environment": "eu-1", "service.name": "from-attributes"}}, "named", ""},
	} {
		before := len(rcv.Spans())
		nh := len(rcv.Headers())
		tp, stop, err := tracing.NewTracerProvider(ctx, tc.s)
		if err != nil || tp == nil {
			t.Fatalf("NewTracerProvider = %v, %v", tp, err)
		}
		_, span := tp.Tracer("t").Start(ctx, "s")
		span.End()
		if err := stop(ctx); err != nil {
			t.Fatal(err)
		}
		spans := rcv.Spans()[before:]
		if len(spans) != 1 || spans[0].Service != tc.service || spans[0].Resource["deployment.environment"] != "eu-1" {
			t.Errorf("%+v: received %+v, want one span of %s with deployment.environment eu-1", tc.s, spans, tc.service)
		}
		if h := rcv.Headers()[nh:]; len(h) != 1 || h[0].Get("Content-Encoding") != tc.compression {
			t.Errorf("%+v: export headers %v, want Content-Encoding %q", tc.s, h, tc.compression)
		}
	}
}

// TestInsecureKeepsTLSOfHTTPSEndpoints: OTEL_EXPORTER_OTLP_INSECURE
// concerns gRPC endpoints; an https endpoint over http/protobuf is still
// spoken to with TLS, so the export and its headers (an API key) never go
// in clear text to it. The plain-HTTP receiver here answers on the https
// URL's port and must receive nothing.
func TestInsecureKeepsTLSOfHTTPSEndpoints(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx := context.Background()
	https := "https://" + strings.TrimPrefix(rcv.URL(), "http://")
	for _, s := range []tracing.Settings{
		{Endpoint: https, Insecure: true, Headers: map[string]string{"x-api-key": "sekrit"}, Timeout: time.Second},
		{Traces: tracing.Signal{Endpoint: https + "/v1/traces", Insecure: true}, Headers: map[string]string{"x-api-key": "sekrit"}, Timeout: time.Second},
	} {
		tp, shutdown, err := tracing.NewTracerProvider(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		_, span := tp.Tracer("t").Start(ctx, "s")
		span.End()
		_ = shutdown(ctx)
		le, stopLogs, err := tracing.NewLogSink(ctx, s, nil)
		if err != nil {
			t.Fatal(err)
		}
		if le != nil {
			le.Emit(ctx, "telemetry", nil, []byte(`{}`), time.Now())
			_ = stopLogs(ctx)
		}
	}
	if n, h := len(rcv.Spans())+len(rcv.Logs()), rcv.Headers(); n != 0 || len(h) != 0 {
		t.Errorf("an https endpoint received %d records in clear text, with headers %v", n, h)
	}
}
