package brain_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/envsdk/envtest"
)

// stallingCollector answers the address of a loopback port that takes
// connections and never reads from or answers them, as a collector that
// hangs does.
func stallingCollector(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	held := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held <- c // taken, never read or answered
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	return ln.Addr().String()
}

// TestShutdownExportKeepsToCloseDeadline: with a collector that takes the
// exports and never answers, Close given one second returns within about
// that second, not after a fixed bound per signal: the spans and the
// telemetry records are flushed together, under Close's context. What
// could not be sent is counted dropped and said in the log, and Close
// does not fail for it.
func TestShutdownExportKeepsToCloseDeadline(t *testing.T) {
	addr := stallingCollector(t)
	var logs envtest.Buffer
	b, id := startTelemetryWith(t, func(c *brain.Config) {
		c.OTLP.Endpoint = "http://" + addr
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{json.RawMessage(`{"phase":"unexported"}`)}})

	const grant = time.Second
	ctx, cancel := context.WithTimeout(context.Background(), grant)
	defer cancel()
	start := time.Now()
	err := b.Server.Close(ctx)
	took := time.Since(start)
	if err != nil {
		t.Errorf("Close = %v, want nil: a collector that does not answer does not fail the shutdown", err)
	}
	// A wide margin over the second given: waiting out a fixed bound for
	// each signal instead takes several seconds more.
	if took > grant+2*time.Second {
		t.Errorf("Close given %v took %v", grant, took)
	}
	rec := httptest.NewRecorder()
	b.Server.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `brain_telemetry_dropped_total{reason="write_error"} 1`+"\n") {
		t.Errorf("the unexported record is not counted dropped:\n%s", grepLines(rec.Body.String(), "brain_telemetry"))
	}
	var traces, records bool
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		if json.Unmarshal([]byte(line), &l) != nil {
			continue
		}
		switch l["msg"] {
		case "trace export at shutdown":
			n, _ := l["spans_dropped"].(float64)
			traces = n > 0
		case "telemetry export at shutdown":
			n, _ := l["records_dropped"].(float64)
			records = n == 1
		}
	}
	if !traces || !records {
		t.Errorf("the log does not say how many spans (%v) and records (%v) were dropped at shutdown:\n%s", traces, records, logs.String())
	}
}
