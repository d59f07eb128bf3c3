package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

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

// TestFailedExportLogIsBounded: a collector refusing exports with a
// megabyte of text (an error page, a proxy's answer) does not write that
// megabyte into the server's log: the line names the signal and the
// refusal and keeps a bounded part of the text.
func TestFailedExportLogIsBounded(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_BLRP_SCHEDULE_DELAY", "50")
	page := strings.Repeat("é<collector error page> ", 1<<20/24)
	var hits atomic.Int64
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, page)
	}))
	defer collector.Close()
	var logged envtest.Buffer
	logger := slog.New(slog.NewJSONHandler(&logged, nil))
	ctx := context.Background()
	s := tracing.Settings{Endpoint: collector.URL, Timeout: 5 * time.Second, Log: logger}
	tp, stopTraces, err := tracing.NewTracerProvider(ctx, s)
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	le, stopLogs, err := tracing.NewLogSink(ctx, s, nil)
	if err != nil || le == nil {
		t.Fatalf("NewLogSink = %v, %v", le, err)
	}
	_, span := tp.Tracer(tracing.InstrumentationName).Start(ctx, "work")
	span.End()
	if err := le.Emit(ctx, "telemetry", nil, []byte(`{}`), time.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(logged.String(), "\n") < 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	_ = stopTraces(ctx)
	_ = stopLogs(ctx)
	if hits.Load() < 2 {
		t.Fatalf("the collector got %d exports, want both signals'", hits.Load())
	}
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	signals := map[string]bool{}
	for _, line := range lines {
		var rec struct {
			Msg    string `json:"msg"`
			Signal string `json:"signal"`
			Err    string `json:"err"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %.200q: %v", line, err)
		}
		if rec.Msg != "telemetry export failed" {
			continue
		}
		signals[rec.Signal] = true
		if len(line) > 4096 {
			t.Errorf("the %s export failure took a %d-byte log line, want at most 4096", rec.Signal, len(line))
		}
		if !strings.Contains(rec.Err, "400") || !strings.Contains(rec.Err, "<collector error page>") {
			t.Errorf("the %s export failure is logged as %.300q, want the refusal and the start of its text", rec.Signal, rec.Err)
		}
		if !utf8.ValidString(rec.Err) {
			t.Errorf("the %s export failure's text is cut inside a character", rec.Signal)
		}
	}
	if !signals["traces"] || !signals["logs"] {
		t.Errorf("export failures logged for %v, want traces and logs", signals)
	}
}
