package tracing_test

import (
	"bytes"
	"context"
	"log"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// closedURL answers an http URL of a loopback port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestFailedExportsAreLoggedOnce: exports a collector never receives are
// said in the server's own log, once and then at most once a minute, and
// nothing is written to the standard library's log (stderr, in another
// format than the server's, once per batch).
func TestFailedExportsAreLoggedOnce(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "50")
	// Other tests' exporters, still failing, may write to the standard
	// library's log while this one reads it.
	var std envtest.Buffer
	log.SetOutput(&std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	url := closedURL(t)
	s := tracing.Settings{Timeout: 500 * time.Millisecond, Log: logger,
		Traces: tracing.Signal{Endpoint: url + "/v1/traces"}, Logs: tracing.Signal{Endpoint: url + "/v1/logs"}}
	tp, stopTraces, err := tracing.NewTracerProvider(ctx, s)
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	le, stopLogs, err := tracing.NewLogSink(ctx, s, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	// The batches go on the processors' own schedule, as in a server:
	// a failure there reaches OpenTelemetry's global error handler,
	// where a failed ForceFlush or Shutdown answers its caller instead.
	for range 3 {
		_, span := tp.Tracer(tracing.InstrumentationName).Start(ctx, "work")
		span.End()
		_ = le.Emit(ctx, "telemetry", nil, []byte(`{}`), time.Now())
		time.Sleep(300 * time.Millisecond)
	}
	_ = stopTraces(ctx)
	_ = stopLogs(ctx)
	// Other tests' exporters may still be failing: only this one's
	// endpoint counts.
	if strings.Contains(std.String(), url) {
		t.Errorf("the standard library's log got %q", std.String())
	}
	out := logged.String()
	for _, signal := range []string{"traces", "logs"} {
		if n := strings.Count(out, "signal="+signal); n != 1 {
			t.Errorf("%d lines about failed %s exports, want 1:\n%s", n, signal, out)
		}
	}
}
