package tracing

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// LogEmitter sends log records. Emit never blocks on the network: records
// are batched, and refused when the batch queue is full.
type LogEmitter interface {
	// Emit sends one record: name is its event name, attrs its attributes
	// (strings, booleans, integers, floats, json.Number, []byte, and maps
	// and slices of them; anything else is formatted with %v), body its
	// body (kept as a string when it is UTF-8, as bytes otherwise), at its
	// timestamp. The span of ctx, if any, becomes the record's trace
	// context. It answers ErrLogQueueFull, and does not send the record,
	// when the records waiting for export fill the queue, and
	// ErrLogSinkClosed after Shutdown; the Delivery of the sink is told
	// of every record it took.
	Emit(ctx context.Context, name string, attrs map[string]any, body []byte, at time.Time) error
}

// NewLogSink answers a LogEmitter exporting over OTLP logs as s says,
// and its Shutdown, which flushes within its context and then reports the
// records it could not export as failed (and answers a *NotExportedError
// counting them). report, if not nil, is told what the receiver
// made of the records. With no logs endpoint it answers a nil emitter.
func NewLogSink(ctx context.Context, s Settings, report Delivery) (LogEmitter, Shutdown, error) {
	sig, err := s.signal("logs")
	if err != nil || sig.Endpoint == "" {
		return nil, noShutdown, err
	}
	var exp sdklog.Exporter
	if sig.Protocol == ProtocolGRPC {
		exp, err = otlploggrpc.New(ctx, exporterOptions(sig, optionSet[otlploggrpc.Option]{
			otlploggrpc.WithEndpointURL, otlploggrpc.WithHeaders, otlploggrpc.WithInsecure,
			otlploggrpc.WithTimeout, otlploggrpc.WithCompressor(CompressionGzip)})...)
	} else {
		exp, err = otlploghttp.New(ctx, exporterOptions(sig, optionSet[otlploghttp.Option]{
			otlploghttp.WithEndpointURL, otlploghttp.WithHeaders, otlploghttp.WithInsecure,
			otlploghttp.WithTimeout, otlploghttp.WithCompression(otlploghttp.GzipCompression)})...)
	}
	if err != nil {
		return nil, noShutdown, fmt.Errorf("tracing: logs exporter: %w", err)
	}
	led := &ledger{report: report}
	bp := sdklog.NewBatchProcessor(countingExporter{Exporter: exp, l: led, failures: newExportLog(s.Log, "logs", sig.Headers)}, sdklog.WithMaxQueueSize(maxOutstanding))
	lp := sdklog.NewLoggerProvider(sdklog.WithProcessor(bp), sdklog.WithResource(newResource(s)))
	stop := func(ctx context.Context) error {
		failedBefore := led.failures()
		err := lp.Shutdown(ctx)
		if lost := led.close(failedBefore); lost > 0 {
			return &NotExportedError{Signal: "logs", Count: lost, Err: err}
		}
		return err
	}
	return &emitter{l: lp.Logger(InstrumentationName), led: led}, stop, nil
}

type emitter struct {
	l   log.Logger
	led *ledger
}

func (e *emitter) Emit(ctx context.Context, name string, attrs map[string]any, body []byte, at time.Time) error {
	if err := e.led.take(); err != nil {
		return err
	}
	var r log.Record
	r.SetEventName(utf8String(name))
	r.SetTimestamp(at)
	r.SetObservedTimestamp(time.Now())
	r.SetSeverity(log.SeverityInfo)
	if utf8.Valid(body) {
		r.SetBody(attribute.StringValue(string(body)))
	} else {
		r.SetBody(attribute.ByteSliceValue(body))
	}
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r.AddAttributes(attribute.KeyValue{Key: attribute.Key(utf8String(k)), Value: value(attrs[k], 0)})
	}
	e.l.Emit(ctx, r)
	return nil
}

// maxDepth bounds the nesting of attribute values converted.
const maxDepth = 8

// utf8String answers s with the bytes that are not UTF-8 replaced by
// U+FFFD: a string that is not UTF-8 cannot be encoded in an OTLP request,
// and would lose every record of its batch.
func utf8String(s string) string {
	v, _ := validString(s)
	return v
}

// value converts v into an attribute value, its strings UTF-8.
func value(v any, depth int) attribute.Value {
	switch v := v.(type) {
	case string:
		return attribute.StringValue(utf8String(v))
	case bool:
		return attribute.BoolValue(v)
	case int:
		return attribute.IntValue(v)
	case int64:
		return attribute.Int64Value(v)
	case int32:
		return attribute.Int64Value(int64(v))
	case uint32:
		return attribute.Int64Value(int64(v))
	case uint64:
		if v > 1<<63-1 {
			return attribute.StringValue(fmt.Sprint(v))
		}
		return attribute.Int64Value(int64(v))
	case float64:
		return attribute.Float64Value(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return attribute.Int64Value(n)
		}
		if f, err := v.Float64(); err == nil {
			return attribute.Float64Value(f)
		}
		return attribute.StringValue(utf8String(v.String()))
	case []byte:
		return attribute.ByteSliceValue(v)
	case json.RawMessage:
		return attribute.StringValue(utf8String(string(v)))
	case nil:
		return attribute.Value{}
	}
	if depth < maxDepth {
		switch v := v.(type) {
		case map[string]any:
			kvs := make([]attribute.KeyValue, 0, len(v))
			for k, x := range v {
				kvs = append(kvs, attribute.KeyValue{Key: attribute.Key(utf8String(k)), Value: value(x, depth+1)})
			}
			slices.SortFunc(kvs, func(a, b attribute.KeyValue) int {
				if a.Key < b.Key {
					return -1
				}
				if a.Key > b.Key {
					return 1
				}
				return 0
			})
			return attribute.MapValue(kvs...)
		case []any:
			vals := make([]attribute.Value, len(v))
			for i, x := range v {
				vals[i] = value(x, depth+1)
			}
			return attribute.SliceValue(vals...)
		}
	}
	return attribute.StringValue(utf8String(fmt.Sprint(v)))
}
