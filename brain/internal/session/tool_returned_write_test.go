package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/brain/internal/journal"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// A tool whose provider answers that its synchronous phase is over
// ("returned") while its tool_call_returned cannot be written does not
// hold the turn until the tool finishes in the background: nothing
// durable says the phase ended, so the call is closed as a reload from
// the journal would close it (failed, interrupted, ambiguous, with the
// write failure as its message), the loop is answered an unknown outcome
// and the turn goes on. The provider's later finish is refused rather
// than recorded after the call was closed.
func TestToolReturnedNotWritten(t *testing.T) {
	h, store := failOnceHarness(t, api.KindToolCallReturned, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	sent := make(chan error, 1)
	go func() {
		_, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
			"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "went on"})})
		sent <- err
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("turn whose tool's returned was not written: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the turn waits for a tool whose synchronous phase is over, though its returned was not written")
	}
	if !store.failed.Load() {
		t.Fatal("the tool_call_returned append never failed")
	}
	recs := h.records(id)
	tools := ofKind(recs, api.KindToolCallStarted)
	if len(tools) != 1 {
		t.Fatalf("%d tool calls started, want 1: %v", len(tools), kinds(recs))
	}
	seq := tools[0].Sequence
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, seq)
	if !closed {
		t.Fatalf("tool call %d left open: %v", seq, kinds(recs))
	}
	if f.Code != api.FailureInterrupted || !f.Ambiguous || !strings.Contains(f.Message, "could not be written") {
		t.Errorf("tool_call_failed %+v, want an interrupted, ambiguous journal write failure", f)
	}
	if n := len(ofKind(recs, api.KindToolCallReturned)) + len(ofKind(recs, api.KindToolCallEnded)); n != 0 {
		t.Errorf("%d returned or ended records for a call closed as failed: %v", n, kinds(recs))
	}
	// A reload of the journal as the fault left it closes the call alike.
	var atFault []journal.Record
	for _, r := range recs {
		if r.Kind == api.KindToolCallFailed {
			break
		}
		atFault = append(atFault, r)
	}
	events, _ := reloaded(t, id, atFault)
	if rf, _, ok := failureEvent(t, events, api.KindToolCallFailed, seq); !ok || rf.Code != f.Code || rf.Ambiguous != f.Ambiguous || rf.Retryable != f.Retryable {
		t.Errorf("closed as %+v in memory, and as %+v (found %v) by a reload", f, rf, ok)
	}
	// The loop was told the outcome is unknown, not that the tool is
	// still pending (no durable record says so).
	tr, err := h.engine.Transcript(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var result *api.ContentBlock
	for _, m := range tr.Messages {
		for i, b := range m.Content {
			if b.Type == api.BlockToolResult {
				result = &m.Content[i]
			}
		}
	}
	if result == nil || !strings.Contains(string(result.Content), `"unknown"`) || result.IsError == nil || !*result.IsError {
		t.Errorf("tool result handed to the model = %+v, want an unknown outcome", result)
	}
	// The turn ended after the call was closed.
	ended := ofKind(recs, api.KindTurnEnded)
	if len(ended) != 1 {
		t.Fatalf("turn not ended: %v", kinds(recs))
	}

	// The provider's finish comes later: it is refused, and nothing is
	// recorded for the closed call.
	svc, err := h.engine.Execution(id, seq)
	if err == nil {
		value := api.Outcome{Status: api.OutcomeOK, Value: json.RawMessage(`"late"`)}
		if _, err = svc.Finish(ctx, &value); err == nil {
			t.Fatal("a finish of the closed call was recorded")
		}
	}
	if !errors.Is(err, ErrExecutionClosed) {
		t.Errorf("late finish = %v, want the execution closed", err)
	}
	if after := h.records(id); len(after) != len(recs) {
		t.Errorf("records after the late finish: %v", kinds(after[len(recs):]))
	}
}

// A finish of a returned tool whose tool_call_ended cannot be written
// answers the provider the journal's own failure, through the service
// call the callback endpoint makes, so that it is answered as storage
// failing (the outcome was not recorded) rather than as an internal
// error; the call is then closed as a reload would close it.
func TestToolFinishNotWrittenAnswersStorage(t *testing.T) {
	h, store := failOnceHarness(t, api.KindToolCallEnded, map[string]string{"box": "returner"})
	id := h.create(toolSession("returner"))
	ctx := context.Background()
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
		"tool_calls": []map[string]any{{"name": "echo"}}, "reply": "waiting"})}); err != nil {
		t.Fatal(err)
	}
	tools := ofKind(h.records(id), api.KindToolCallStarted)
	if len(tools) != 1 {
		t.Fatalf("%d tool calls started, want 1", len(tools))
	}
	svc, err := h.engine.Execution(id, tools[0].Sequence)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Call(ctx, envapi.MethodFinish, json.RawMessage(`{"status":"ok","value":"done"}`))
	if !store.failed.Load() || !errors.Is(err, journal.ErrWrite) {
		t.Fatalf("finish whose end was not written = %v, want an error wrapping journal.ErrWrite", err)
	}
	if _, err := h.engine.Send(ctx, id, api.UserInput{Message: "next"}); err != nil {
		t.Fatal(err)
	}
	page, err := h.engine.Events(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if f, _, closed := failureEvent(t, page.Events, api.KindToolCallFailed, tools[0].Sequence); !closed || f.Code != api.FailureInterrupted || !f.Ambiguous {
		t.Errorf("tool call after its finish was lost: closed %v as %+v: %v", closed, f, kinds(h.records(id)))
	}
}
