package session

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
)

// TestCloseWaitsForBackgroundTool: a tool that returned without finishing
// is admitted work. A graceful Close waits for it while its callback stays
// usable, and the tool's own finish, not a cancel, closes it.
func TestCloseWaitsForBackgroundTool(t *testing.T) {
	h, id, svc, done := closingWithBackgroundTool(t)
	ctx := context.Background()
	select {
	case err := <-done:
		t.Fatalf("Close returned (%v) while a background tool was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"late"`)}
	if _, err := svc.Finish(ctx, &value); err != nil {
		t.Fatalf("finish during the drain: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("drain: %v", err)
	}
	h.engine = nil
	ended := ofKind(h.records(id), api.KindToolCallEnded)
	if len(ended) != 1 {
		t.Fatalf("tool_call_ended records: %d", len(ended))
	}
	if e := decode[api.ToolCallEnded](t, ended[0].Data); e.Outcome.Status != api.OutcomeOK || string(e.Outcome.Value) != `"late"` {
		t.Fatalf("background tool closed with %+v, want its own finish", e.Outcome)
	}
}

// closingWithBackgroundTool runs a turn whose tool returned without
// finishing, then starts a graceful Close (bounded by 20 s) that waits for
// it. It answers the session, the tool's execution services and Close's
// result.
func closingWithBackgroundTool(t *testing.T) (*harness, string, Services, <-chan error) {
	t.Helper()
	h := newHarness(t, Config{}, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	toolSeq := ofKind(h.records(id), api.KindToolCallStarted)[0].Sequence
	svc, err := h.engine.Execution(id, toolSeq)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		done <- h.engine.Close(cctx)
	}()
	return h, id, svc, done
}
