package session

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestDispatchNeedsDistinctCallIDs: a dispatch whose calls cannot be told
// apart by their call_id (one is empty, or two are the same) is refused as
// invalid before anything is recorded or sent; distinct ids run.
func TestDispatchNeedsDistinctCallIDs(t *testing.T) {
	var calls []api.ToolInvocation
	var got error
	loops := map[string]agentloop.Func{
		"ids": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
			_, got = a.Dispatch(ctx, calls)
			return api.TurnOutput{}, nil
		},
	}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("ids")
	id := h.create(req)
	call := func(id string) api.ToolInvocation {
		return api.ToolInvocation{CallID: id, Name: "echo", Environment: "box", Input: []byte(`{}`)}
	}
	for name, batch := range map[string][]api.ToolInvocation{
		"empty":    {call("")},
		"repeated": {call("c1"), call("c2"), call("c1")},
	} {
		calls = batch
		if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: name}); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(got, ErrInvalid) {
			t.Errorf("%s call_id: dispatch = %v, want ErrInvalid", name, got)
		}
	}
	if n := len(ofKind(h.records(id), api.KindToolCallStarted)); n != 0 || len(h.envs.opsOf(envapi.RequestExecute)) != 0 {
		t.Fatalf("refused dispatches recorded %d calls and sent %d executes", n, len(h.envs.opsOf(envapi.RequestExecute)))
	}
	calls = []api.ToolInvocation{call("c1"), call("c2")}
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "distinct"}); err != nil || got != nil {
		t.Fatalf("distinct call ids: %v, %v", err, got)
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 2 {
		t.Fatalf("distinct call ids sent %d executes, want 2", n)
	}
}
