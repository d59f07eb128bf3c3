package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// TestDefaultTurnCarriesPendingResults: a turn started by a message is
// also handed the batch of background results still pending (a tool that
// finished while the session was interrupted, or just before the
// message). A successful return completes that batch, so the loop must
// show those results to the model and keep them in the transcript, before
// the user's message.
func TestDefaultTurnCarriesPendingResults(t *testing.T) {
	f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "noted"), StopReason: api.StopEndTurn}}}
	ended := json.RawMessage(`{"sequence":5,"outcome":{"status":"ok","value":"report.pdf written"},"is_error":false}`)
	in := api.TurnInput{
		Input:      &api.UserInput{Message: "and now?"},
		Transcript: []api.Message{text("user", "write the report in the background"), text("assistant", "started")},
		Events:     []api.Event{{Sequence: 9, EventType: api.KindToolCallEnded, Data: ended}},
	}
	if _, err := Default(context.Background(), f, in); err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 1 {
		t.Fatalf("%d model calls", len(f.requests))
	}
	msgs := f.requests[0].Messages
	var seen bool
	for _, m := range msgs[2:] {
		if strings.Contains(m.Text(), "report.pdf written") {
			seen = true
		}
	}
	if !seen {
		t.Fatalf("the model was not shown the pending result: %+v", msgs)
	}
	if last := msgs[len(msgs)-1]; last.Role != api.RoleUser || !strings.HasSuffix(last.Text(), "and now?") {
		t.Fatalf("the user's message is not last: %+v", last)
	}
	var saved bool
	for _, m := range f.saved {
		if strings.Contains(m.Text(), "report.pdf written") {
			saved = true
		}
	}
	if !saved {
		t.Fatalf("the pending result is not in the saved transcript: %+v", f.saved)
	}
}

// failingDispatch is fakeServices whose dispatch fails.
type failingDispatch struct{ fakeServices }

func (f *failingDispatch) Dispatch(context.Context, []api.ToolInvocation) ([]api.ToolReturn, error) {
	return nil, errors.New("dispatch refused")
}

// A turn that fails after it dispatched tools saves the calls and their
// results (without the background note, whose batch stays pending), so
// that the next turn's model knows they ran; a turn that fails before any
// dispatch saves nothing.
func TestDefaultFailureKeepsDispatchedCalls(t *testing.T) {
	uses := api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: "call_1", Name: "echo", Input: json.RawMessage(`{"n":1}`)}}}
	ended := json.RawMessage(`{"sequence":5,"outcome":{"status":"ok","value":"x"},"is_error":false}`)
	prior := []api.Message{text("user", "before"), text("assistant", "ok")}
	in := func() api.TurnInput {
		return api.TurnInput{Input: &api.UserInput{Message: "go"}, Transcript: prior,
			Tools:  []api.ActivationTool{{Name: "echo", Environments: []string{"box"}}},
			Events: []api.Event{{Sequence: 9, EventType: api.KindToolCallEnded, Data: ended}}}
	}

	// The model fails after a round of tools.
	f := &fakeServices{answers: []api.ModelResult{{Message: uses, StopReason: api.StopToolUse}}}
	if _, err := Default(context.Background(), f, in()); err == nil {
		t.Fatal("the turn succeeded without a second answer")
	}
	if len(f.saved) != 5 || f.saved[2].Text() != "go" || f.saved[3].Content[0].ID != "call_1" || f.saved[4].Content[0].ToolUseID != "call_1" {
		t.Fatalf("saved after the model failed = %+v", f.saved)
	}

	// The dispatch fails: the call is answered as unknown.
	g := &failingDispatch{fakeServices{answers: []api.ModelResult{{Message: uses, StopReason: api.StopToolUse}}}}
	if _, err := Default(context.Background(), g, in()); err == nil {
		t.Fatal("the turn succeeded though its dispatch failed")
	}
	if n := len(g.saved); n != 5 || g.saved[4].Content[0].IsError == nil || !*g.saved[4].Content[0].IsError ||
		!strings.Contains(string(g.saved[4].Content[0].Content), "dispatch refused") {
		t.Fatalf("saved after the dispatch failed = %+v", g.saved)
	}

	// The first model call fails: nothing ran, nothing is saved.
	h := &fakeServices{}
	if _, err := Default(context.Background(), h, in()); err == nil || h.saved != nil {
		t.Fatalf("first call failed: err %v, saved %+v", err, h.saved)
	}
}
