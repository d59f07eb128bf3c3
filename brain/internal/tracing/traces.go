package tracing

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// InstrumentationName names Brain's tracer and logger.
const InstrumentationName = "github.com/brain-in-go/brain"

// MaxAttributeValue bounds the characters of a span attribute's string
// value (each string of a slice): a longer one is exported cut to it.
// Some values come from clients (a session id taken from a request's path
// may be as long as the server takes a request line), and one batch of
// spans that carry them would pass the bound of a collector's requests,
// which refuses the whole batch.
const MaxAttributeValue = 1024

// Shutdown flushes what is buffered and stops an exporter, within ctx; it
// is safe to call more than once. When it could not export all it held it
// answers a *NotExportedError counting what it did not send.
type Shutdown func(ctx context.Context) error

func noShutdown(context.Context) error { return nil }

// NewTracerProvider answers the TracerProvider exporting spans as s
// says, batched, and its Shutdown. With no traces endpoint it answers a
// nil provider: the caller starts no spans.
func NewTracerProvider(ctx context.Context, s Settings) (trace.TracerProvider, Shutdown, error) {
	sig, err := s.signal("traces")
	if err != nil || sig.Endpoint == "" {
		return nil, noShutdown, err
	}
	var exp sdktrace.SpanExporter
	if sig.Protocol == ProtocolGRPC {
		exp, err = otlptracegrpc.New(ctx, exporterOptions(sig, optionSet[otlptracegrpc.Option]{
			otlptracegrpc.WithEndpointURL, otlptracegrpc.WithHeaders, otlptracegrpc.WithInsecure,
			otlptracegrpc.WithTimeout, otlptracegrpc.WithCompressor(CompressionGzip)})...)
	} else {
		exp, err = otlptracehttp.New(ctx, exporterOptions(sig, optionSet[otlptracehttp.Option]{
			otlptracehttp.WithEndpointURL, otlptracehttp.WithHeaders, otlptracehttp.WithInsecure,
			otlptracehttp.WithTimeout, otlptracehttp.WithCompression(otlptracehttp.GzipCompression)})...)
	}
	if err != nil {
		return nil, noShutdown, fmt.Errorf("tracing: traces exporter: %w", err)
	}
	tally := &spanTally{onDrop: s.SpansDropped}
	failures := newExportLog(s.Log, "traces", sig.Headers)
	drops := &dropLog{log: failures.log}
	exp = failureLogging{SpanExporter: exp, log: failures, drops: drops, tally: tally}
	limits := sdktrace.NewSpanLimits()
	if limits.AttributeValueLengthLimit < 0 || limits.AttributeValueLengthLimit > MaxAttributeValue {
		limits.AttributeValueLengthLimit = MaxAttributeValue
	}
	// The batcher's queue has room for a ForceFlush's marker besides the
	// spans spanQueue lets through.
	batcher := sdktrace.NewBatchSpanProcessor(exp, sdktrace.WithMaxQueueSize(MaxQueuedSpans+1))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spanQueue{next: batcher, t: tally, drops: drops}),
		sdktrace.WithResource(newResource(s)), sdktrace.WithRawSpanLimits(limits))
	return tp, func(ctx context.Context) error { return tally.shutdown(ctx, tp) }, nil
}

// newResource describes the process: the attributes of s.Resource and
// service.name (s.ServiceName, else the one among them, else brain). The
// library itself reads no environment.
func newResource(s Settings) *resource.Resource {
	kvs := make([]attribute.KeyValue, 0, len(s.Resource)+1)
	for _, k := range slices.Sorted(maps.Keys(s.Resource)) {
		if k != "service.name" {
			kvs = append(kvs, attribute.String(k, s.Resource[k]))
		}
	}
	kvs = append(kvs, attribute.String("service.name", first(s.ServiceName, s.Resource["service.name"], DefaultServiceName)))
	return resource.NewSchemaless(kvs...)
}
