package tracing_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/internal/otlptest"
	"go.opentelemetry.io/otel/trace"
)

// exporting starts a receiver and a tracer provider exporting to it; it
// answers a context that ends with the test (30 s at the most), the
// receiver, a tracer and the provider's shutdown. The receiver is closed
// when the test ends.
func exporting(t *testing.T) (context.Context, *otlptest.Receiver, trace.Tracer, func(context.Context) error) {
	t.Helper()
	rcv := otlptest.Start()
	t.Cleanup(rcv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	tp, shutdown, err := tracing.NewTracerProvider(ctx, tracing.Settings{Endpoint: rcv.URL()})
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	return ctx, rcv, tp.Tracer(tracing.InstrumentationName), shutdown
}
