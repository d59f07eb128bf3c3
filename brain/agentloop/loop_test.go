package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// fakeServices answers model calls from a queue and echoes tool inputs.
type fakeServices struct {
	answers    []api.ModelResult
	requests   []api.ModelRequest
	dispatched [][]api.ToolInvocation
	saved      []api.Message
	seq        uint64
}

func (f *fakeServices) Model(_ context.Context, req api.ModelRequest) (api.ModelResult, error) {
	f.requests = append(f.requests, req)
	if len(f.answers) == 0 {
		return api.ModelResult{}, errors.New("no more answers")
	}
	a := f.answers[0]
	f.answers = f.answers[1:]
	return a, nil
}

func (f *fakeServices) Dispatch(_ context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	f.dispatched = append(f.dispatched, calls)
	out := make([]api.ToolReturn, len(calls))
	for i, c := range calls {
		f.seq++
		data, _ := json.Marshal(api.ToolCallEnded{Sequence: f.seq, Outcome: api.Outcome{Status: api.OutcomeOK, Value: c.Input}})
		out[i] = api.ToolReturn{CallID: c.CallID, Sequence: f.seq, Finished: true,
			Events: []api.Event{{Sequence: f.seq + 100, EventType: api.KindToolCallEnded, Data: data}}}
	}
	return out, nil
}

func (f *fakeServices) Emit(context.Context, string, json.RawMessage) (uint64, error) { return 0, nil }
func (f *fakeServices) Telemetry(context.Context, json.RawMessage) error              { return nil }
func (f *fakeServices) Events(context.Context, uint64) (api.EventPage, error) {
	return api.EventPage{}, nil
}
func (f *fakeServices) SetTranscript(_ context.Context, m []api.Message) (uint64, error) {
	f.saved = m
	return 1, nil
}
func (f *fakeServices) KVRead(context.Context, string) (json.RawMessage, bool, error) {
	return nil, false, nil
}
func (f *fakeServices) KVPut(context.Context, string, json.RawMessage) (uint64, error) { return 0, nil }
func (f *fakeServices) KVDelete(context.Context, string) (uint64, error)               { return 0, nil }
func (f *fakeServices) Environments(context.Context, json.RawMessage) (json.RawMessage, error) {
	return nil, nil
}

func text(role, s string) api.Message {
	return api.Message{Role: role, Content: []api.ContentBlock{api.TextBlock(s)}}
}

func TestDefaultTextTurn(t *testing.T) {
	f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "hello"), StopReason: api.StopEndTurn}}}
	prior := []api.Message{text("user", "a"), text("assistant", "b")}
	out, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "hi"}, Transcript: prior})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Result) != `"hello"` {
		t.Fatalf("result = %s", out.Result)
	}
	if len(f.requests) != 1 || len(f.requests[0].Messages) != 3 || f.requests[0].Messages[2].Text() != "hi" {
		t.Fatalf("requests = %+v", f.requests)
	}
	if len(f.saved) != 4 || f.saved[3].Text() != "hello" {
		t.Fatalf("saved = %+v", f.saved)
	}
}

func TestDefaultToolTurn(t *testing.T) {
	uses := api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{
		{Type: api.BlockToolUse, ID: "call_1", Name: "echo", Input: json.RawMessage(`{"n":1}`)},
		{Type: api.BlockToolUse, ID: "call_2", Name: "echo", Input: json.RawMessage(`{"n":2}`)},
	}}
	f := &fakeServices{answers: []api.ModelResult{
		{Message: uses, StopReason: api.StopToolUse},
		{Message: text("assistant", "done"), StopReason: api.StopEndTurn},
	}}
	tools := []api.ActivationTool{{Name: "echo", Environments: []string{"box"}}}
	if _, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if len(f.dispatched) != 1 || len(f.dispatched[0]) != 2 {
		t.Fatalf("dispatched = %+v", f.dispatched)
	}
	for _, c := range f.dispatched[0] {
		if c.Environment != "box" {
			t.Fatalf("environment = %q", c.Environment)
		}
	}
	// user, assistant tool_use, user tool_result, assistant text
	if len(f.saved) != 4 {
		t.Fatalf("saved %d messages", len(f.saved))
	}
	res := f.saved[2].Content
	if len(res) != 2 || res[0].ToolUseID != "call_1" || string(res[1].Content) != `{"n":2}` || *res[0].IsError {
		t.Fatalf("tool results = %+v", res)
	}
	if len(f.requests[1].Messages) != 3 {
		t.Fatalf("second request has %d messages", len(f.requests[1].Messages))
	}
}

func TestDefaultStepBudget(t *testing.T) {
	var answers []api.ModelResult
	for i := 0; i < 5; i++ {
		answers = append(answers, api.ModelResult{StopReason: api.StopToolUse, Message: api.Message{Role: api.RoleAssistant,
			Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: fmt.Sprint("c", i), Name: "t"}}}})
	}
	f := &fakeServices{answers: answers}
	_, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Configuration: json.RawMessage(`{"max_steps":2}`)})
	if !errors.Is(err, ErrStepBudget) || len(f.requests) != 2 {
		t.Fatalf("err = %v after %d calls", err, len(f.requests))
	}
}

func TestDefaultEventTriggered(t *testing.T) {
	f := &fakeServices{answers: []api.ModelResult{{Message: text("assistant", "noted"), StopReason: api.StopEndTurn}}}
	// No events: nothing to do, no model call.
	if _, err := Default(context.Background(), f, api.TurnInput{}); err != nil || len(f.requests) != 0 {
		t.Fatalf("err = %v, %d calls", err, len(f.requests))
	}
	ev := api.Event{Sequence: 9, EventType: api.KindToolCallEnded, Data: json.RawMessage(`{"sequence":5}`)}
	if _, err := Default(context.Background(), f, api.TurnInput{Events: []api.Event{ev}}); err != nil {
		t.Fatal(err)
	}
	if len(f.requests) != 1 || len(f.saved) != 2 {
		t.Fatalf("requests %d saved %d", len(f.requests), len(f.saved))
	}
}
