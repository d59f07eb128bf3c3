package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// TestExportsOverGRPC: with the grpc protocol, spans and log records
// reach an OTLP/gRPC receiver, with the configured headers as metadata.
func TestExportsOverGRPC(t *testing.T) {
	rcv, err := otlptest.StartGRPC()
	if err != nil {
		t.Fatal(err)
	}
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	set := tracing.Settings{Endpoint: rcv.URL(), Protocol: tracing.ProtocolGRPC, Insecure: true,
		Headers: map[string]string{"x-collector-key": "k"}}
	tp, stopTraces, err := tracing.NewTracerProvider(ctx, set)
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	le, stopLogs, err := tracing.NewLogSink(ctx, set, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	_, span := tp.Tracer(tracing.InstrumentationName).Start(ctx, "over-grpc")
	span.End()
	le.Emit(ctx, "telemetry", map[string]any{"brain.session_id": "s1"}, []byte(`{"n":1}`), time.Now())
	if err := stopTraces(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stopLogs(ctx); err != nil {
		t.Fatal(err)
	}
	if spans := rcv.Spans(); len(spans) != 1 || spans[0].Name != "over-grpc" || spans[0].Service != tracing.DefaultServiceName {
		t.Fatalf("spans %+v", spans)
	}
	if logs := rcv.Logs(); len(logs) != 1 || logs[0].Body != `{"n":1}` || logs[0].Attributes["brain.session_id"] != "s1" {
		t.Fatalf("logs %+v", logs)
	}
	for _, h := range rcv.Headers() {
		if h.Get("X-Collector-Key") != "k" {
			t.Errorf("export metadata %v lacks the configured header", h)
		}
	}
}
