package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
)

// TestInvalidUTF8DoesNotLoseTheBatch: a span carrying bytes that are not
// UTF-8 (a session id a client sent percent-encoded in a request's path,
// a failure's message) is exported with them replaced, and the spans
// batched with it reach the collector.
func TestInvalidUTF8DoesNotLoseTheBatch(t *testing.T) {
	ctx, rcv, tr, shutdown := exporting(t)
	_, span := tr.Start(ctx, "ordinary")
	span.End()
	_, span = tr.Start(ctx, "GET /v1/sessions/{id}")
	span.SetAttributes(attribute.String("brain.session_id", "s\xff\xfe"))
	span.SetStatus(codes.Error, "failed: \xc3")
	span.End()
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown = %v", err)
	}
	spans := rcv.Spans()
	if len(spans) != 2 {
		t.Fatalf("the collector received %d spans, want 2", len(spans))
	}
}

// TestInvalidUTF8LogAttributesDoNotLoseTheBatch: a record whose attribute
// holds bytes that are not UTF-8 is exported with them replaced, and the
// records batched with it are delivered.
func TestInvalidUTF8LogAttributesDoNotLoseTheBatch(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got tally
	le, stop, err := tracing.NewLogSink(ctx, tracing.Settings{Endpoint: rcv.URL(), Timeout: 5 * time.Second}, got.report)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	if err := le.Emit(ctx, "telemetry", map[string]any{"brain.tool": "ok"}, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	attrs := map[string]any{"brain.tool": "t\xff", "nested": map[string]any{"k\xfe": []any{"v\xc3"}}}
	if err := le.Emit(ctx, "telemetry", attrs, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	_ = stop(ctx)
	if d, f := got.get(); d != 2 || f != 0 {
		t.Errorf("reported %d delivered, %d failed; want 2, 0", d, f)
	}
	if n := len(rcv.Logs()); n != 2 {
		t.Errorf("the receiver kept %d records, want 2", n)
	}
}
