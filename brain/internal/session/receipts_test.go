package session

import (
	"context"
	"errors"
	"testing"

	"github.com/brain-in-go/brain/brain/api"
	"github.com/brain-in-go/brain/envsdk/envapi"
)

// An execute answered with accepted or progress carries no result: the
// tool closes with outcome unknown (an error), the execute is not sent
// again, and the explicit receipt does not mark the environment
// unreachable.
func TestAcceptedOrProgressReceiptLeavesOutcomeUnknown(t *testing.T) {
	for _, behaviour := range []string{"accepted", "progress"} {
		t.Run(behaviour, func(t *testing.T) {
			h := newHarness(t, Config{}, map[string]string{"box": behaviour})
			id := h.create(toolSession(behaviour))
			ctx := context.Background()
			if _, err := h.engine.Send(ctx, id, api.UserInput{Message: script(map[string]any{
				"tool_calls": []map[string]any{{"name": "echo", "input": map[string]int{"n": 1}}}, "reply": "done"})}); err != nil {
				t.Fatal(err)
			}
			recs := h.records(id)
			started, ended := ofKind(recs, api.KindToolCallStarted), ofKind(recs, api.KindToolCallEnded)
			if len(started) != 1 || len(ended) != 1 {
				t.Fatalf("records = %v", kinds(recs))
			}
			e := decode[api.ToolCallEnded](t, ended[0].Data)
			if e.Sequence != started[0].Sequence || e.Outcome.Status != api.OutcomeUnknown || !e.IsError || len(e.Outcome.Value) != 0 {
				t.Fatalf("tool_call_ended = %+v, want outcome unknown and is_error", e)
			}
			if n := len(h.envs.opsOf(envapi.RequestExecute)); n != 1 {
				t.Fatalf("%d executes sent, want 1", n)
			}
			if n := len(ofKind(recs, api.KindEnvironmentUnreachable)); n != 0 {
				t.Fatalf("%d environment_unreachable for an explicit %s receipt", n, behaviour)
			}
			if _, err := h.engine.Execution(id, started[0].Sequence); !errors.Is(err, ErrExecutionClosed) {
				t.Fatalf("the tool stayed open after its %s receipt: %v", behaviour, err)
			}
		})
	}
}
