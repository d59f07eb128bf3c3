package tracing_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/internal/tracing"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// hangingCollector answers the URL of a loopback port that takes
// connections and never answers, as a collector that hangs does.
func hangingCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

// TestSpansBeyondTheQueueAreCounted: while the collector does not answer,
// the spans ended beyond tracing.MaxQueuedSpans are dropped, each told to
// Settings.SpansDropped as queue_full, and the log says so once, not once
// per span; a Shutdown counts as not exported only the spans it held.
func TestSpansBeyondTheQueueAreCounted(t *testing.T) {
	var logs envtest.Buffer
	var mu sync.Mutex
	dropped := map[string]int{}
	s := tracing.Settings{Endpoint: hangingCollector(t), Timeout: 5 * time.Second,
		Log: slog.New(slog.NewTextHandler(&logs, nil)),
		SpansDropped: func(reason string, n int) {
			mu.Lock()
			dropped[reason] += n
			mu.Unlock()
		}}
	ctx := context.Background()
	tp, shutdown, err := tracing.NewTracerProvider(ctx, s)
	if err != nil || tp == nil {
		t.Fatalf("NewTracerProvider = %v, %v", tp, err)
	}
	const extra = 300
	tr := tp.Tracer(tracing.InstrumentationName)
	for range tracing.MaxQueuedSpans + extra {
		_, span := tr.Start(ctx, "GET /health/live")
		span.End()
	}
	mu.Lock()
	full := dropped[tracing.DropQueueFull]
	mu.Unlock()
	if full != extra {
		t.Errorf("%d spans counted dropped for a full queue, want the %d beyond it", full, extra)
	}
	if n := strings.Count(logs.String(), "trace export queue is full"); n != 1 {
		t.Errorf("%d log lines about the full queue, want 1:\n%s", n, logs.String())
	}
	sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	var lost *tracing.NotExportedError
	if err := shutdown(sctx); !errors.As(err, &lost) || lost.Count != tracing.MaxQueuedSpans {
		t.Errorf("Shutdown = %v, want %d spans not exported (those dropped before were counted already)", err, tracing.MaxQueuedSpans)
	}
}
