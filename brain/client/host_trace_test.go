package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
	"github.com/brain-in-go/brain/internal/otlptest"
)

// TestHostToolSpans: with tracing on, the execute of a tool served over
// the host connection is an environment span of its own, a child of the
// tool call's span, carrying the session and the tool call's sequence.
func TestHostToolSpans(t *testing.T) {
	rcv := otlptest.Start()
	defer rcv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, srv := start(t, brain.Config{OTLP: brain.OTLP{TracesEndpoint: rcv.URL() + "/v1/traces"}})
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Handle("add", func(context.Context, *client.ToolCall) (api.Outcome, error) {
		return client.OK(map[string]int{"sum": 3}), nil
	})
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "add")
	if _, err := s.Send(ctx, api.UserInput{Message: toolScript("add")}); err != nil {
		t.Fatal(err)
	}
	started := ofKind(events(t, s), api.KindToolCallStarted)
	if len(started) != 1 {
		t.Fatalf("%d tool calls", len(started))
	}
	// Close flushes the exporter.
	if err := srv.Close(ctx); err != nil {
		t.Fatal(err)
	}
	var tool, exec *otlptest.Span
	spans := rcv.Spans()
	for i := range spans {
		sp := &spans[i]
		switch {
		case sp.Name == "brain.tool_call":
			tool = sp
		case sp.Name == "environment execute":
			exec = sp
		}
	}
	if tool == nil || exec == nil {
		t.Fatalf("no tool call or environment execute span among %d: %+v", len(spans), spans)
	}
	if exec.ParentSpanID != tool.SpanID || exec.TraceID != tool.TraceID {
		t.Errorf("the execute span is not a child of the tool call's: %+v, %+v", exec, tool)
	}
	want := map[string]any{
		"brain.session_id":  s.ID,
		"brain.sequence":    int64(started[0].Sequence),
		"brain.driver":      api.DriverHost,
		"brain.environment": "local",
		"brain.receipt":     "accepted",
	}
	for k, v := range want {
		if exec.Attributes[k] != v {
			t.Errorf("execute span %s = %v (%T), want %v", k, exec.Attributes[k], exec.Attributes[k], v)
		}
	}
}
