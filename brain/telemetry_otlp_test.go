package brain_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
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
