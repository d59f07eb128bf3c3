package client_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/client"
)

// TestHostCommandLongerThanTheBoundFailsItsCall: Brain records the call
// whose command was longer than the host reads as failed with
// invalid_input, and the call after it, on the same connection, as the
// handler answered it.
func TestHostCommandLongerThanTheBoundFailsItsCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _ := start(t, brain.Config{})
	client.SetLineBound(c, 4096)
	h, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	h.Handle("add", func(context.Context, *client.ToolCall) (api.Outcome, error) { return client.OK(3), nil })
	if err := h.Connected(ctx); err != nil {
		t.Fatal(err)
	}
	s := hostSession(t, c, h, "add")
	script := `{"tool_calls":[{"name":"add","input":{"pad":"` + strings.Repeat("x", 8192) + `"}},{"name":"add","input":{}}]}`
	if _, err := s.Send(context.Background(), api.UserInput{Message: script}); err != nil {
		t.Fatal(err)
	}
	ended := ofKind(events(t, s), api.KindToolCallEnded)
	if len(ended) != 2 {
		t.Fatalf("%d tool calls ended, want 2", len(ended))
	}
	outcomes := map[string]api.Outcome{}
	for _, ev := range ended {
		o := outcomeOf(t, ev)
		outcomes[string(o.Status)] = o
	}
	long, ok := outcomes[string(api.OutcomeFailed)]
	if !ok || long.Error == nil || long.Error.Code != "invalid_input" || !strings.Contains(long.Error.Message, "4096") {
		t.Fatalf("outcomes %+v: want one failed with invalid_input naming the bound", outcomes)
	}
	if _, ok := outcomes[string(api.OutcomeOK)]; !ok {
		t.Fatalf("outcomes %+v: want the short call's ok", outcomes)
	}
	if err := h.Err(); err != nil {
		t.Fatalf("host stopped: %v", err)
	}
}
