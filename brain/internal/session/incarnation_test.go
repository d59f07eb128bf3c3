package session

import (
	"context"
	"testing"

	"github.com/brain-in-go/brain/brain/agentloop"
	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// TestEnvironmentSequencePinsTheIncarnation dispatches calls pinned to an
// incarnation of environment box: the current one runs there; a stale one
// ends with environment_incarnation_stale and no execute reaches any
// environment.
func TestEnvironmentSequencePinsTheIncarnation(t *testing.T) {
	var pinned uint64
	loops := map[string]agentloop.Func{
		"pin": func(ctx context.Context, a agentloop.Services, in api.TurnInput) (api.TurnOutput, error) {
			_, err := a.Dispatch(ctx, []api.ToolInvocation{{CallID: "c1", Name: "echo", Environment: "box", EnvironmentSequence: pinned, Input: []byte(`{"n":1}`)}})
			return api.TurnOutput{}, err
		},
	}
	h := newHarness(t, Config{Loops: testLoops(loops)}, map[string]string{"box": "echo"})
	req := toolSession("echo")
	req.Agentloop = testLoop("pin")
	id := h.create(req)
	binding := h.envs.opsOf(envapi.RequestSetup)[0].Binding.Sequence

	pinned = binding
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "current"}); err != nil {
		t.Fatal(err)
	}
	ended := ofKind(h.records(id), api.KindToolCallEnded)
	if e := decode[api.ToolCallEnded](t, ended[0].Data); e.Outcome.Status != api.OutcomeOK || len(h.envs.opsOf(envapi.RequestExecute)) != 1 {
		t.Fatalf("pinned to the current incarnation: %+v, %d executes", e, len(h.envs.opsOf(envapi.RequestExecute)))
	}

	pinned = binding + 1000
	if _, err := h.engine.Send(context.Background(), id, api.UserInput{Message: "stale"}); err != nil {
		t.Fatal(err)
	}
	ended = ofKind(h.records(id), api.KindToolCallEnded)
	e := decode[api.ToolCallEnded](t, ended[1].Data)
	if e.Outcome.Status != api.OutcomeFailed || e.Outcome.Error.Code != api.FailureEnvironmentIncarnationStale || !e.IsError {
		t.Fatalf("pinned to a stale incarnation: %+v", e)
	}
	if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 1 {
		t.Fatalf("a stale call reached an environment: %d executes", n)
	}
}
