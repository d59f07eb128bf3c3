package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
)

// strictDispatch is fakeServices whose dispatch refuses, as the session
// does, the whole call when one invocation names a tool it does not have.
type strictDispatch struct {
	fakeServices
	tools map[string]bool
}

func (f *strictDispatch) Dispatch(ctx context.Context, calls []api.ToolInvocation) ([]api.ToolReturn, error) {
	for _, c := range calls {
		if !f.tools[c.Name] {
			return nil, fmt.Errorf("invalid request: unknown tool %q", c.Name)
		}
	}
	return f.fakeServices.Dispatch(ctx, calls)
}

// A call to a tool the session does not have is answered with an error
// result naming the tool, without being dispatched; the other calls of the
// step run, and the model is asked again with every result.
func TestDefaultUnknownToolAnsweredAsError(t *testing.T) {
	uses := api.Message{Role: api.RoleAssistant, Content: []api.ContentBlock{
		{Type: api.BlockToolUse, ID: "call_1", Name: "echo", Input: json.RawMessage(`{"n":1}`)},
		{Type: api.BlockToolUse, ID: "call_2", Name: "ehco", Input: json.RawMessage(`{"n":2}`)},
		{Type: api.BlockToolUse, ID: "call_3", Name: "echo", Input: json.RawMessage(`{"n":3}`)},
	}}
	f := &strictDispatch{tools: map[string]bool{"echo": true}, fakeServices: fakeServices{answers: []api.ModelResult{
		{Message: uses, StopReason: api.StopToolUse},
		{Message: text("assistant", "done"), StopReason: api.StopEndTurn},
	}}}
	tools := []api.ActivationTool{{Name: "echo", Environments: []string{"box"}}, {Name: "other", Environments: []string{"box"}}}
	out, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Tools: tools})
	if err != nil {
		t.Fatalf("the turn failed: %v", err)
	}
	if string(out.Result) != `"done"` {
		t.Fatalf("result = %s", out.Result)
	}
	if len(f.dispatched) != 1 || len(f.dispatched[0]) != 2 || f.dispatched[0][0].CallID != "call_1" || f.dispatched[0][1].CallID != "call_3" {
		t.Fatalf("dispatched = %+v", f.dispatched)
	}
	if len(f.requests) != 2 {
		t.Fatalf("%d model calls", len(f.requests))
	}
	res := f.requests[1].Messages[2].Content
	if len(res) != 3 {
		t.Fatalf("tool results = %+v", res)
	}
	for i, want := range []string{"call_1", "call_2", "call_3"} {
		if res[i].Type != api.BlockToolResult || res[i].ToolUseID != want || res[i].IsError == nil {
			t.Fatalf("result %d = %+v", i, res[i])
		}
	}
	if *res[0].IsError || string(res[0].Content) != `{"n":1}` || *res[2].IsError || string(res[2].Content) != `{"n":3}` {
		t.Fatalf("results of the dispatched calls = %+v", res)
	}
	var o api.Outcome
	if err := json.Unmarshal(res[1].Content, &o); err != nil {
		t.Fatalf("result of the unknown call is not an outcome: %s", res[1].Content)
	}
	if !*res[1].IsError || o.Status != api.OutcomeFailed || o.Error == nil || o.Error.Code != api.CodeNotFound ||
		!strings.Contains(o.Error.Message, `"ehco"`) || !strings.Contains(o.Error.Message, "echo") {
		t.Fatalf("result of the unknown call = %s", res[1].Content)
	}
	if len(f.saved) != 4 || len(f.saved[2].Content) != 3 {
		t.Fatalf("saved = %+v", f.saved)
	}
}

// When every call of a step names an unknown tool nothing is dispatched,
// and the step still counts against the step budget.
func TestDefaultOnlyUnknownToolsBounded(t *testing.T) {
	var answers []api.ModelResult
	for i := 0; i < 5; i++ {
		answers = append(answers, api.ModelResult{StopReason: api.StopToolUse, Message: api.Message{Role: api.RoleAssistant,
			Content: []api.ContentBlock{{Type: api.BlockToolUse, ID: fmt.Sprint("c", i), Name: "nope", Input: json.RawMessage(`{}`)}}}})
	}
	f := &strictDispatch{fakeServices: fakeServices{answers: answers}}
	_, err := Default(context.Background(), f, api.TurnInput{Input: &api.UserInput{Message: "go"}, Configuration: json.RawMessage(`{"max_steps":3}`)})
	if err == nil || len(f.requests) != 3 || len(f.dispatched) != 0 {
		t.Fatalf("err = %v after %d calls and %d dispatches", err, len(f.requests), len(f.dispatched))
	}
}
