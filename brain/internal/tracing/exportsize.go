package tracing

import (
	"go.opentelemetry.io/otel/attribute"
	sdklog "go.opentelemetry.io/otel/sdk/log"
)

// maxExportBytes bounds the bodies and attributes of the log records sent
// in one export request. Collectors bound their requests (an OpenTelemetry
// Collector takes 4 MiB over gRPC by default) and refuse a larger one as a
// whole, and a batch of telemetry records, each up to 64 KiB, may be many
// times that: a batch past it is exported in several requests.
const maxExportBytes = 3 << 20

// recordOverhead is what a record is counted besides its body and
// attributes (timestamps, severity, trace context, framing).
const recordOverhead = 64

// exportChunks splits records, in order, into runs whose estimated size
// is within maxExportBytes (a record larger than that alone in its run).
func exportChunks(records []sdklog.Record) [][]sdklog.Record {
	var chunks [][]sdklog.Record
	start, size := 0, 0
	for i := range records {
		n := recordSize(&records[i])
		if i > start && size+n > maxExportBytes {
			chunks = append(chunks, records[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(records) {
		chunks = append(chunks, records[start:])
	}
	return chunks
}

// recordSize estimates the bytes r takes in an export request.
func recordSize(r *sdklog.Record) int {
	n := recordOverhead + len(r.EventName()) + valueSize(r.Body(), 0)
	r.WalkAttributes(func(kv attribute.KeyValue) bool {
		n += len(kv.Key) + valueSize(kv.Value, 0)
		return true
	})
	return n
}

func valueSize(v attribute.Value, depth int) int {
	const scalar = 16
	switch v.Type() {
	case attribute.STRING:
		return len(v.AsString()) + scalar
	case attribute.BYTESLICE:
		return len(v.AsByteSlice()) + scalar
	case attribute.STRINGSLICE:
		n := scalar
		for _, x := range v.AsStringSlice() {
			n += len(x) + scalar
		}
		return n
	case attribute.SLICE:
		n := scalar
		if depth < maxDepth {
			for _, x := range v.AsSlice() {
				n += valueSize(x, depth+1)
			}
		}
		return n
	case attribute.MAP:
		n := scalar
		if depth < maxDepth {
			for _, kv := range v.AsMap() {
				n += len(kv.Key) + valueSize(kv.Value, depth+1)
			}
		}
		return n
	}
	return scalar
}
