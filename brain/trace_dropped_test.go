package brain_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/braintest"
	"github.com/brain-in-go/brain/brain/internal/tracing"
)

// scrapeSpansDropped answers brain_trace_spans_dropped_total{reason} as
// /metrics serves it.
func scrapeSpansDropped(t *testing.T, b *braintest.Brain, reason string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	b.Server.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	m := regexp.MustCompile(fmt.Sprintf(`(?m)^brain_trace_spans_dropped_total\{reason="%s"\} (\d+)$`, reason)).FindStringSubmatch(rec.Body.String())
	if m == nil {
		t.Fatalf("/metrics serves no brain_trace_spans_dropped_total{reason=%q}:\n%s", reason, grepLines(rec.Body.String(), "brain_trace"))
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// TestSpansDroppedAreScraped: while the collector hangs, the requests'
// spans beyond the export queue are dropped and /metrics counts them
// (queue_full); while it is down, the spans whose exports failed are
// counted too (export_failed).
func TestSpansDroppedAreScraped(t *testing.T) {
	t.Run("hanging collector", func(t *testing.T) {
		addr := stallingCollector(t)
		b := braintest.Start(t, braintest.Options{Edit: func(c *brain.Config) {
			c.OTLP.Endpoint = "http://" + addr
			c.OTLP.Timeout = 5 * time.Second
		}})
		defer closeWithin(b, time.Second)
		if n := scrapeSpansDropped(t, b, tracing.DropQueueFull); n != 0 {
			t.Fatalf("%d spans dropped before any request", n)
		}
		const extra = 200
		for range tracing.MaxQueuedSpans + extra {
			rec := httptest.NewRecorder()
			b.Server.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health/live", nil))
		}
		if n := scrapeSpansDropped(t, b, tracing.DropQueueFull); n != extra {
			t.Errorf("brain_trace_spans_dropped_total{reason=queue_full} = %d, want the %d spans beyond the queue", n, extra)
		}
	})
	t.Run("collector down", func(t *testing.T) {
		t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
		down := closedAddr(t)
		b := braintest.Start(t, braintest.Options{Edit: func(c *brain.Config) {
			c.OTLP.Endpoint = "http://" + down
			c.OTLP.Timeout = 200 * time.Millisecond
		}})
		defer closeWithin(b, time.Second)
		const requests = 10
		for range requests {
			rec := httptest.NewRecorder()
			b.Server.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/health/live", nil))
		}
		deadline := time.Now().Add(20 * time.Second)
		for scrapeSpansDropped(t, b, tracing.DropExportFailed) < requests && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if n := scrapeSpansDropped(t, b, tracing.DropExportFailed); n != requests {
			t.Errorf("brain_trace_spans_dropped_total{reason=export_failed} = %d, want the %d requests' spans", n, requests)
		}
	})
}

// closeWithin closes b's server within d: a collector that does not
// answer holds the flush of its spans until then.
func closeWithin(b *braintest.Brain, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = b.Server.Close(ctx)
}

// closedAddr answers a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
