package brain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envtest"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// TestTelemetryGoesToOTLPLogs: with an OTLP logs endpoint configured, a
// tool's telemetry record is exported as one OTLP log record whose body is
// the record as sent and whose attributes are the origin Brain assigned;
// with the file configured as well, the same record lands in both.
func TestTelemetryGoesToOTLPLogs(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	b, id := startTelemetryWith(t, func(c *brain.Config) {
		c.Telemetry.File = path
		c.OTLP.LogsEndpoint = rcv.URL() + "/v1/logs"
	})
	evs := probeTurn(t, b, id, map[string]any{"forge": true})
	waitMetric(t, b, "brain_telemetry_records_total", "1")
	var logs []otlptest.Log
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if logs = rcv.Logs(); len(logs) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(logs) != 1 {
		t.Fatalf("the receiver got %d log records, want the tool's one: %+v", len(logs), logs)
	}
	l := logs[0]
	if l.EventName != "brain.telemetry" {
		t.Errorf("event name %q", l.EventName)
	}
	if body, _ := l.Body.(string); body != forgedRecord {
		t.Errorf("body %v, want the record as sent %s", l.Body, forgedRecord)
	}
	tool := lastOf(evs, "tool_call_started")
	want := map[string]any{
		"brain.session_id":      id,
		"brain.origin.kind":     api.OriginTool,
		"brain.origin.sequence": int64(tool.Sequence),
		"brain.turn":            int64(lastOf(evs, api.KindTurnStarted).Sequence),
		"brain.activation":      int64(lastOf(evs, "activation_started").Sequence),
		"brain.tool":            "probe",
		"brain.environment":     "box",
	}
	for k, v := range want {
		if l.Attributes[k] != v {
			t.Errorf("attribute %s = %v (%T), want %v", k, l.Attributes[k], l.Attributes[k], v)
		}
	}
	if l.Service != "brain" {
		t.Errorf("service.name %q", l.Service)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("sent-by-the-tool")) {
		t.Errorf("the file sink did not get the record too: %v %s", err, data)
	}
	for _, lg := range logs {
		if s, _ := lg.Body.(string); strings.Contains(s, "probed") {
			t.Errorf("a live model delta was exported as telemetry: %v", lg.Body)
		}
	}
}

// TestTelemetryCountsWhatTheReceiverAccepted: a record is counted as
// written once the OTLP receiver accepted it, not when it was handed to
// the exporter. A receiver that refuses the export leaves it dropped
// (write_error); one that answers a partial success leaves the records it
// rejected dropped and the others written.
func TestTelemetryCountsWhatTheReceiverAccepted(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	b, id := startTelemetryWith(t, func(c *brain.Config) { c.OTLP.LogsEndpoint = rcv.URL() + "/v1/logs" })
	rec := func(s ...string) map[string]any {
		var rs []json.RawMessage
		for _, x := range s {
			rs = append(rs, json.RawMessage(`{"phase":"`+x+`"}`))
		}
		return map[string]any{"records": rs}
	}

	rcv.Refuse(http.StatusBadRequest)
	probeTurn(t, b, id, rec("refused"))
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="write_error"}`, "1")
	if got := metricValue(t, b, "brain_telemetry_records_total"); got != "0" {
		t.Errorf("after a refused export brain_telemetry_records_total = %s, want 0", got)
	}

	rcv.Refuse(0)
	rcv.RejectLogs(func(l otlptest.Log) bool { s, _ := l.Body.(string); return strings.Contains(s, "rejected") })
	probeTurn(t, b, id, rec("kept", "rejected", "kept"))
	waitMetric(t, b, "brain_telemetry_records_total", "2")
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="write_error"}`, "2")
	if logs := rcv.Logs(); len(logs) != 2 {
		t.Errorf("the receiver kept %d records, want 2: %+v", len(logs), logs)
	}
}

// TestTelemetryFileAndOTLPCountEachRecordOnce: with both sinks, a record
// the file could not take is dropped once (write_error), though it is
// still exported and accepted; one the file took and the receiver
// rejected is dropped once too.
func TestTelemetryFileAndOTLPCountEachRecordOnce(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /dev/full")
	}
	rcv := otlptest.Start()
	defer rcv.Close()
	path := filepath.Join(t.TempDir(), "telemetry.jsonl")
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	b, id := startTelemetryWith(t, func(c *brain.Config) {
		c.Telemetry.File = path
		c.OTLP.LogsEndpoint = rcv.URL() + "/v1/logs"
	})
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{json.RawMessage(`{"phase":"full"}`)}})
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="write_error"}`, "1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	rcv.RejectLogs(func(l otlptest.Log) bool { s, _ := l.Body.(string); return strings.Contains(s, "rejected") })
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{json.RawMessage(`{"phase":"rejected"}`)}})
	// The exporter reports records in order: once the second is counted,
	// the first was reported too.
	waitMetric(t, b, `brain_telemetry_dropped_total{reason="write_error"}`, "2")
	if got := metricValue(t, b, "brain_telemetry_records_total"); got != "0" {
		t.Errorf("brain_telemetry_records_total = %s, want 0: neither record reached both sinks", got)
	}
	if logs := rcv.Logs(); len(logs) != 1 {
		t.Errorf("the receiver kept %d records, want the first", len(logs))
	}
	if lines := telemetryLines(t, path); len(lines) != 1 {
		t.Errorf("the file has %d lines, want the second record", len(lines))
	}
}

// TestCollectorDownAtShutdown: a collector that takes connections and
// never answers holds no record of a turn and does not fail the server's
// shutdown (telemetry is best effort, as the spans are): Close succeeds,
// the records it could not export are dropped (write_error) and the
// server's log says so.
func TestCollectorDownAtShutdown(t *testing.T) {
	addr := stallingCollector(t)
	var logs envtest.Buffer
	b, id := startTelemetryWith(t, func(c *brain.Config) {
		c.OTLP.LogsEndpoint = "http://" + addr + "/v1/logs"
		c.Logger = slog.New(slog.NewJSONHandler(&logs, nil))
	})
	probeTurn(t, b, id, map[string]any{"records": []json.RawMessage{json.RawMessage(`{"phase":"unexported"}`)}})
	if err := b.Server.Close(context.Background()); err != nil {
		t.Errorf("Close = %v, want nil: a collector that is down does not fail the shutdown", err)
	}
	rec := httptest.NewRecorder()
	b.Server.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `brain_telemetry_dropped_total{reason="write_error"} 1`+"\n") {
		t.Errorf("the unexported record is not counted dropped:\n%s", grepLines(rec.Body.String(), "brain_telemetry"))
	}
	if !strings.Contains(logs.String(), "telemetry export at shutdown") {
		t.Errorf("the log does not say the export failed at shutdown:\n%s", logs.String())
	}
}

func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
